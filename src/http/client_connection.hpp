// The client side of one HTTP/1.1 connection, as the request handler sees it:
// write a whole response or a chunked stream, and learn at once when the
// client goes away (the watcher reads the socket while the handler waits on
// the upstream, and runs the abort hook on EOF so the engine stops work).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "http/asio.hpp"
#include "http/deadline.hpp"

namespace arbiter {

class ClientConnection {
 public:
  ClientConnection(tcp::socket& socket, beast::flat_buffer& buffer, Deadline& deadline,
                   std::chrono::milliseconds write_timeout, const std::atomic<bool>& draining);

  // The connection's I/O deadline: the request path arms it around upstream
  // operations too (one operation at a time per connection).
  Deadline& deadline() { return deadline_; }

  // Whole response. Adds Connection: close when the connection will end.
  Task<bool> send(http::response<http::string_body>& res);

  // Chunked streaming response: the header, then events, then the end.
  Task<bool> start_stream(http::response<http::empty_body>& res);
  // Writes each piece as its own chunk, all in one write (no added delay).
  Task<bool> send_chunks(std::span<const std::string_view> pieces);
  Task<bool> end_stream();

  // True when the connection can serve another request afterwards.
  bool keep_alive() const { return keep_alive_ && !failed_ && !gone_; }
  void set_keep_alive(bool v) { keep_alive_ = v; }
  // The client closed its side (seen by the watcher or a failed write).
  bool client_gone() const { return gone_; }
  // Bytes of response body written so far for this request.
  std::size_t body_bytes_sent() const { return body_bytes_; }
  // Time the first body byte was written, if any.
  std::optional<std::chrono::steady_clock::time_point> first_body_byte_at() const {
    return first_body_byte_at_;
  }

  // Called once, on the connection's strand, when the client goes away while
  // a request is in progress. Cleared at the end of the request.
  void set_abort_hook(std::function<void()> hook) { abort_hook_ = std::move(hook); }

  // Used by the server around each request.
  void begin_request(bool keep_alive);
  void start_watch();
  Task<void> stop_watch();

 private:
  void watch();        // one read (or error wait) on the client socket
  void watch_ended();  // the watch's last operation completed
  // After a write: disarms the deadline; false (and the client marked gone)
  // when the write failed or timed out.
  bool write_done(const beast::error_code& ec);
  Task<bool> write_buffers(std::span<const net::const_buffer> buffers);
  void mark_gone();
  void note_body(std::size_t n);

  tcp::socket& socket_;
  beast::flat_buffer& buffer_;  // shared with the request parser: pipelined bytes land here
  Deadline& deadline_;  // shared with the request parser: pipelined bytes land here
  std::chrono::milliseconds write_timeout_;
  const std::atomic<bool>& draining_;
  bool keep_alive_ = true;
  bool failed_ = false;  // a write failed or timed out
  bool gone_ = false;
  bool watching_ = false;
  std::size_t body_bytes_ = 0;
  std::optional<std::chrono::steady_clock::time_point> first_body_byte_at_;
  std::function<void()> abort_hook_;
  std::string head_;  // the response head being written (reused across requests)
  net::steady_timer watch_done_;  // cancelled when the watcher finishes
};

}  // namespace arbiter
