// A request's answer with its last write held back (docs/audit.md,
// "Nothing lost"): the pipeline puts it in front of the client's sink when
// an observer must record the request before the client can have all of its
// answer (the store's journal: a crash after the client has its answer must
// not lose the bill). Every write passes through at once except the one
// that ends the answer (a whole response, a stream's end, or a stream's
// last events with its end), which is copied and reported delivered; the
// pipeline writes it with release() once those observers have run. A
// client already gone gets nothing held: the write goes to the connection,
// which says so. Writes after a held one (none expected) release it first,
// keeping the order.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http/response_sink.hpp"

namespace arbiter {

class AnswerEndHold final : public ResponseSink {
 public:
  explicit AnswerEndHold(ResponseSink& inner) : inner_(inner) {}

  Task<bool> send(http::response<http::string_body>& res) override;
  Task<bool> send(const ResponseHead& head, std::string_view body) override;
  Task<bool> start_stream(const ResponseHead& head) override;
  Task<bool> send_chunk(std::span<const std::string_view> parts) override;
  Task<bool> end_stream() override;
  Task<bool> write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) override;

  bool client_gone() const override { return inner_.client_gone(); }
  void set_abort_hook(std::function<void()> hook) override { inner_.set_abort_hook(std::move(hook)); }
  void set_keep_alive(bool keep_alive) override { inner_.set_keep_alive(keep_alive); }

  // Writes the held write, if any; whether it was delivered (true when
  // nothing was held).
  Task<bool> release();

 private:
  // A head's fields, owned (a ResponseHead only views them).
  struct OwnedHead {
    explicit OwnedHead(const ResponseHead& head);
    ResponseHead view() const;
    unsigned status;
    std::string content_type, cache_control;
    std::vector<std::pair<std::string, std::string>> upstream, gateway;
  };
  // The held write. On the heap, made only when a write is held: the sink
  // lives in every request's pipeline frame for the request's whole life.
  struct Held {
    enum class Kind { kResponse, kWhole, kStreamEnd } kind;
    std::optional<http::response<http::string_body>> response;  // kResponse
    std::optional<OwnedHead> head;  // kWhole; kStreamEnd when the stream's head goes with its end
    std::string body;               // kWhole: the body; kStreamEnd: the last events
  };

  void hold_stream_end(const ResponseHead* head, std::span<const std::string_view> parts);

  ResponseSink& inner_;
  std::unique_ptr<Held> held_;
};

}  // namespace arbiter
