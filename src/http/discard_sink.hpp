// A response sink that drops what it is given and counts it: the consumer
// of a shadow request's answer (the engine still does the work; nobody
// waits for it). Never gone unless abandon() says so.
#pragma once

#include <cstddef>

#include "http/response_sink.hpp"

namespace arbiter {

class DiscardSink final : public ResponseSink {
 public:
  Task<bool> send(http::response<http::string_body>& res) override;
  Task<bool> send(const ResponseHead& head, std::string_view body) override;
  Task<bool> start_stream(const ResponseHead& head) override;
  Task<bool> send_chunk(std::span<const std::string_view> parts) override;
  Task<bool> end_stream() override;
  bool client_gone() const override { return gone_; }
  void set_abort_hook(std::function<void()> hook) override { hook_ = std::move(hook); }
  void set_keep_alive(bool) override {}

  // Nobody wants the answer any more: later writes fail and the hook (the
  // relay's upstream abort) runs.
  void abandon();

  unsigned status() const { return status_; }         // 0 until a head was given
  std::size_t body_bytes() const { return bytes_; }   // body bytes dropped
  bool ended() const { return ended_; }               // the whole response was given

 private:
  unsigned status_ = 0;
  std::size_t bytes_ = 0;
  bool ended_ = false;
  bool gone_ = false;
  std::function<void()> hook_;
};

}  // namespace arbiter
