// One batch line's client: runs the request pipeline in the gateway itself,
// acting for the batch's tenant, and keeps the answer whole (status, body,
// Retry-After, request id) for the batch's output file. Nothing to a
// socket. Its Deadline is swept by the batch runner (the server sweeps a
// connection's). cancel() is a client hanging up: the engine stops work.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "http/request_client.hpp"

namespace arbiter::batch {

class LineClient final : public RequestClient {
 public:
  LineClient(net::any_io_executor executor, std::string tenant,
             std::optional<std::chrono::steady_clock::time_point> start_by)
      : executor_(std::move(executor)), tenant_(std::move(tenant)), start_by_(start_by) {}

  Task<bool> send(http::response<http::string_body>& res) override;
  Task<bool> send(const ResponseHead& head, std::string_view body) override;
  Task<bool> start_stream(const ResponseHead& head) override;
  Task<bool> send_chunk(std::span<const std::string_view> parts) override;
  Task<bool> end_stream() override;
  bool client_gone() const override { return gone_; }
  void set_abort_hook(std::function<void()> hook) override { hook_ = std::move(hook); }
  void set_keep_alive(bool) override {}

  net::any_io_executor executor() override { return executor_; }
  Deadline& deadline() override { return deadline_; }
  const std::string& remote_address() override { return kNoAddress; }
  const std::vector<std::string>& peer_names() const override { return kNoNames; }
  std::size_t body_bytes_sent() const override { return body_.size(); }
  std::optional<std::chrono::steady_clock::time_point> first_body_byte_at() const override { return first_byte_; }
  std::string_view acting_tenant() const override { return tenant_; }
  std::optional<std::chrono::steady_clock::time_point> start_by() const override { return start_by_; }

  // Nobody wants the answer any more (the batch was cancelled): the hook
  // (the relay's upstream abort) runs, later writes fail.
  void cancel();

  unsigned status() const { return status_; }  // 0: no answer (yet)
  const std::string& body() const { return body_; }
  const std::string& request_id() const { return request_id_; }
  // The answer's Retry-After, when it had one (a 429 or 503).
  std::optional<std::chrono::seconds> retry_after() const { return retry_after_; }

 private:
  void take_head(unsigned status, HeaderPairs upstream, HeaderPairs gateway);
  void take_body(std::string_view part);

  static inline const std::string kNoAddress;
  static inline const std::vector<std::string> kNoNames;

  net::any_io_executor executor_;
  std::string tenant_;
  std::optional<std::chrono::steady_clock::time_point> start_by_;
  Deadline deadline_;
  std::function<void()> hook_;
  bool gone_ = false;
  unsigned status_ = 0;
  std::string body_;
  std::string request_id_;
  std::optional<std::chrono::seconds> retry_after_;
  std::optional<std::chrono::steady_clock::time_point> first_byte_;
};

}  // namespace arbiter::batch
