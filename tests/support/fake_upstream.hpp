// A scriptable stand-in for an OpenAI-compatible engine (vLLM, llama.cpp...),
// served from the test process on 127.0.0.1 with an ephemeral port. Each
// request is answered by the next queued behaviour, or by the handler when
// the queue is empty. Everything the gateway sends is recorded, and so is
// when each connection was closed by the gateway, so tests can check
// rewriting, header stripping, keep-alive reuse and cancellation.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "support/test_clock.hpp"

namespace arbiter::test {

using Headers = std::vector<std::pair<std::string, std::string>>;

// What the upstream received, as it arrived on the wire.
struct RecordedRequest {
  std::size_t connection_id = 0;  // index into FakeUpstream::connections()
  std::string method;
  std::string target;
  Headers headers;  // names lower-cased, in arrival order
  std::string body;
  TimePoint received_at{};

  // First value of a header (name compared case-insensitively).
  std::optional<std::string> header(std::string_view name) const;
};

// One accepted TCP connection.
struct ConnectionRecord {
  std::size_t id = 0;
  TimePoint opened_at{};
  std::size_t requests = 0;
  // The gateway closed its end (EOF or reset seen by our reader).
  std::optional<TimePoint> peer_closed_at;
  // A write of ours failed (the gateway had gone away).
  std::optional<TimePoint> write_failed_at;
  // We closed it ourselves (crash behaviour, Connection: close, shutdown).
  std::optional<TimePoint> closed_by_us_at;
  bool open = true;
};

// --- Behaviours -----------------------------------------------------------

// A complete response with a fixed body.
struct Respond {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  Headers headers;           // extra response headers
  Millis header_delay{0};    // wait before sending anything
  bool close_after = false;  // Connection: close and drop the socket
};

// An SSE stream sent as a chunked response: one chunk per event,
// "data: <payload>\n\n", then "data: [DONE]\n\n" unless send_done is false.
struct Stream {
  std::vector<std::string> payloads;  // the JSON after "data: "
  Millis interval{0};                 // delay before each event after the first
  Millis header_delay{0};             // delay before the response header
  bool send_done = true;
  // Close the socket abruptly after this many events (no [DONE], no final
  // chunk): a crashed engine.
  std::optional<std::size_t> crash_after;
  std::string content_type = "text/event-stream";
  // Set: these bytes are sent instead of the payloads' events and [DONE],
  // one chunk each, `interval` apart (events cut anywhere, CRLF, ...).
  std::vector<std::string> raw;

  // The exact SSE bytes this stream sends in full (without crash_after).
  std::string wire() const;
  // The exact SSE bytes of the first n events.
  std::string wire_prefix(std::size_t n) const;
};

// Read the request and never answer (the connection stays open until the
// gateway closes it or the upstream stops).
struct Hang {};

// Read the request, then close the connection without any response.
struct CloseImmediately {
  bool reset = false;  // RST (SO_LINGER 0) instead of FIN
};

using Behaviour = std::variant<Respond, Stream, Hang, CloseImmediately>;
using Handler = std::function<Behaviour(const RecordedRequest&)>;

// Ready-made payloads resembling an OpenAI chat.completion.chunk.
std::vector<std::string> chat_chunks(std::size_t n, std::string_view model = "m1");
// A small non-streaming chat.completion body.
std::string chat_completion_body(std::string_view model = "m1", std::string_view text = "hello");

class FakeUpstream {
 public:
  // Starts listening on `address` (loopback: 127.0.0.1 or ::1), port 0,
  // with `threads` I/O threads.
  explicit FakeUpstream(unsigned threads = 1, const std::string& address = "127.0.0.1");
  ~FakeUpstream();
  FakeUpstream(const FakeUpstream&) = delete;
  FakeUpstream& operator=(const FakeUpstream&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Behaviour for requests when the queue is empty. Default: 200 with
  // chat_completion_body().
  void set_handler(Handler handler);
  // Queue behaviours consumed one per request, in order.
  void push(Behaviour behaviour);

  std::vector<RecordedRequest> requests() const;
  std::vector<ConnectionRecord> connections() const;
  std::size_t request_count() const;
  std::size_t open_connections() const;
  std::size_t total_connections() const;

  // Block until n requests have been received; false on timeout.
  bool wait_for_requests(std::size_t n, Millis timeout) const;
  // Block until connection `id` was closed by the gateway (peer close or a
  // failed write); returns when, or nullopt on timeout.
  std::optional<TimePoint> wait_for_peer_close(std::size_t id, Millis timeout) const;
  // Block until no connection is open; false on timeout.
  bool wait_for_no_open_connections(Millis timeout) const;

  // Requests and connections as text, for failure messages.
  std::string describe() const;

  // Internal: shared with the per-connection sessions.
  struct State;

 private:
  std::unique_ptr<State> state_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
};

}  // namespace arbiter::test
