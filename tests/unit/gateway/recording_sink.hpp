// A ResponseSink that remembers what it was given, for unit tests of the
// relay, the dispatcher and the sinks that wrap another.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "http/response_sink.hpp"

namespace arbiter::testing {

class RecordingSink final : public ResponseSink {
 public:
  Task<bool> send(http::response<http::string_body>& res) override {
    status = res.result_int();
    body += res.body();
    ended = true;
    co_return !gone;
  }
  Task<bool> send(const ResponseHead& head, std::string_view b) override {
    status = head.status;
    content_type = head.content_type;
    body += b;
    ended = true;
    co_return !gone;
  }
  Task<bool> start_stream(const ResponseHead& head) override {
    ++stream_writes;
    take_head(head);
    co_return !gone;
  }
  Task<bool> send_chunk(std::span<const std::string_view> parts) override {
    ++stream_writes;
    co_return take_chunk(parts);
  }
  Task<bool> end_stream() override {
    ++stream_writes;
    ended = true;
    co_return !gone;
  }
  // One write, as ClientConnection makes it.
  Task<bool> write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) override {
    ++stream_writes;
    if (head) take_head(*head);
    if (!parts.empty() && !take_chunk(parts)) co_return false;
    if (last) ended = true;
    co_return !gone;
  }
  bool client_gone() const override { return gone; }
  void set_abort_hook(std::function<void()> h) override { hook = std::move(h); }
  void set_keep_alive(bool k) override { keep_alive = k; }

  void take_head(const ResponseHead& head) {
    status = head.status;
    content_type = head.content_type;
    streamed = true;
  }
  bool take_chunk(std::span<const std::string_view> parts) {
    if (gone) return false;
    std::string& chunk = chunks.emplace_back();
    for (const std::string_view p : parts) chunk += p;
    body += chunk;
    if (++writes == leave_after_writes) leave();
    return true;
  }

  // The consumer goes away: the hook runs, later writes fail.
  void leave() {
    gone = true;
    if (auto h = std::move(hook)) h();
  }

  unsigned status = 0;
  std::string content_type;
  std::string body;
  bool streamed = false;
  bool ended = false;
  bool gone = false;
  bool keep_alive = true;
  std::vector<std::string> chunks;  // each send_chunk call's bytes
  int writes = 0;         // chunks
  int stream_writes = 0;  // calls that would each be one write on a connection: head, chunks, end
  int leave_after_writes = -1;  // leave() after this many send_chunk calls
  std::function<void()> hook;
};

}  // namespace arbiter::testing
