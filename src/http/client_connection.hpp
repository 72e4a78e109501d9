// The client side of one HTTP/1.1 connection. It owns the connection's one
// reader: a read stays pending on the client socket whenever the server
// waits for a request or a request is in progress. Between requests its bytes
// are the next request; during one they are pipelined bytes (kept up to
// 64 KiB, then dropped and the connection closed after the response) or the
// client going away (EOF or reset, seen whatever was pipelined), which runs
// the request's abort hook at once so the engine stops work. One pending read for both jobs means no
// cancel-and-restart per request, and no syscall when a request starts.
// On plain TCP the pending read is a wait for readiness: the bytes are read
// when they are there, into a buffer sized then, so an idle connection
// holds no read buffer.
// Writes go out at once when the kernel takes them (no posted completion).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_completion_handler.hpp>

#include "http/asio.hpp"
#include "http/deadline.hpp"
#include "http/http_head.hpp"
#include "http/request_client.hpp"
#include "http/stream.hpp"

namespace arbiter {

class ClientConnection final : public RequestClient {
 public:
  ClientConnection(Stream& stream, beast::flat_buffer& buffer, Deadline& deadline,
                   std::chrono::milliseconds write_timeout, const std::atomic<bool>& draining);

  // The thread (io_context) the connection runs on.
  net::any_io_executor executor() override { return stream_.get_executor(); }

  // The connection's I/O deadline: the request path arms it around upstream
  // operations too (one operation at a time per connection).
  Deadline& deadline() override { return deadline_; }

  // Whole response. Adds Connection: close when the connection will end.
  Task<bool> send(http::response<http::string_body>& res) override;
  Task<bool> send(const ResponseHead& head, std::string_view body) override;

  // Chunked streaming response: the header, then events, then the end. To
  // an HTTP/1.0 client the same, unframed, ending with the connection.
  Task<bool> start_stream(http::response<http::empty_body>& res);
  Task<bool> start_stream(const ResponseHead& head) override;
  // One chunk of `parts` back to back, in one write (http/chunk_write.hpp).
  Task<bool> send_chunk(std::span<const std::string_view> parts) override;
  // The head, a chunk and the end, whichever are given, in one write.
  Task<bool> write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) override;
  // Each piece its own chunk, all in one write (the simulator's events, one
  // chunk each as engines send them).
  Task<bool> send_chunks(std::span<const std::string_view> pieces);
  Task<bool> end_stream() override;

  // The request is a HEAD: whole responses go out as their head alone (with
  // the Content-Length the body would have). Reset by begin_request.
  void set_head_only() { head_only_ = true; }

  // True when the connection can serve another request afterwards.
  bool keep_alive() const { return keep_alive_ && !failed_ && !gone_ && !dropped_pipelined_; }
  void set_keep_alive(bool v) override { keep_alive_ = v; }
  // The client closed its side (seen by the reader or a failed write).
  bool client_gone() const override { return gone_; }
  // The client's IP address as text (cached: one getpeername per connection);
  // empty when the socket cannot tell.
  const std::string& remote_address() override;
  // The names of the client's verified TLS certificate (subject CN, DNS and
  // URI SANs; http/tls_context.hpp); empty without one.
  const std::vector<std::string>& peer_names() const override { return peer_names_; }
  void set_peer_names(std::vector<std::string> names) { peer_names_ = std::move(names); }
  // Bytes of response body written so far for this request.
  std::size_t body_bytes_sent() const override { return body_bytes_; }
  // Time the first body byte was written, if any.
  std::optional<std::chrono::steady_clock::time_point> first_body_byte_at() const override {
    return first_body_byte_at_;
  }

  // Called once, on the connection's strand, when the client goes away while
  // a request is in progress. Cleared at the end of the request.
  void set_abort_hook(std::function<void()> hook) override { abort_hook_ = std::move(hook); }

  // Used by the server. `owner` is kept alive while a read is pending.
  void start(std::weak_ptr<void> owner) { owner_ = std::move(owner); }
  // Until more bytes are in the buffer; the read error (EOF, reset, the
  // socket closed by a deadline) once there will be none. `expected`: bytes
  // the caller knows are on their way (a body's rest), up to 256 KiB a read.
  Task<beast::error_code> wait_for_bytes(std::size_t expected = 0);
  // `chunked`: a stream may be chunked (false for an HTTP/1.0 client: its
  // streams go unframed and end with the connection).
  void begin_request(bool keep_alive, bool chunked = true);
  void end_request();

 private:
  void read();             // starts the pending read unless there is one
  // Plain TCP: the socket is readable; reads what it holds (ec: the error).
  void read_ready(beast::error_code& ec);
  // Bytes read during a request: pipelined, kept within the limit.
  void take_pipelined(const char* data, std::size_t n);
  void on_read(const beast::error_code& ec);
  // A write in two steps, so that the usual one costs no coroutine frame:
  // write_at_once is true when the kernel took every byte; when it is
  // false and the write has not failed, write_rest sends what is left.
  // Either marks the client gone when the write fails or times out.
  bool write_at_once(std::span<const net::const_buffer> buffers, std::size_t& written);
  Task<bool> write_rest(std::span<const net::const_buffer> buffers, std::size_t written);
  void write_failed();
  void mark_gone();
  // Settles keep-alive for the response about to be written.
  bool response_keep_alive();
  // The same for a stream's head: never for an unframed (HTTP/1.0) stream.
  bool stream_keep_alive();
  void note_body(std::size_t n);

  Stream& stream_;
  beast::flat_buffer& buffer_;  // the request parser's: read bytes land here
  Deadline& deadline_;
  std::chrono::milliseconds write_timeout_;
  const std::atomic<bool>& draining_;
  std::weak_ptr<void> owner_;
  bool keep_alive_ = true;
  bool head_only_ = false;  // set_head_only()
  bool chunked_ = true;     // begin_request()
  bool failed_ = false;  // a write failed or timed out
  bool gone_ = false;
  bool in_request_ = false;
  bool reading_ = false;          // a read is pending
  bool in_read_handler_ = false;  // on_read is running (it restarts the read itself)
  bool dropped_pipelined_ = false;  // pipelined bytes past the limit were dropped: close after the request
  beast::error_code read_error_;  // sticky: no read after it
  // wait_for_bytes. In an optional: Boost 1.81's move assignment of
  // any_completion_handler wraps the handler in itself, recursively.
  std::optional<boost::asio::any_completion_handler<void(beast::error_code)>> waiter_;
  std::size_t body_bytes_ = 0;
  std::optional<std::chrono::steady_clock::time_point> first_body_byte_at_;
  std::function<void()> abort_hook_;
  std::string head_;  // the response head being written (reused across requests)
  std::string chunk_copy_;  // write_stream's one buffer, when it copies (reused)
  std::optional<std::string> remote_address_;  // remote_address(), once asked
  std::vector<std::string> peer_names_;
  std::size_t expected_ = 0;  // wait_for_bytes's, for the next read
  // Under TLS, the pending read's target (the parser's buffer is consumed
  // between requests while a read is pending, so TLS reads land here and
  // are copied in). Plain TCP waits for readiness instead and reads into
  // the buffer when bytes are there: an idle connection holds no buffer.
  std::unique_ptr<std::array<char, 4096>> tls_chunk_;
};

}  // namespace arbiter
