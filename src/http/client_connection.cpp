#include "http/client_connection.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>

#include "http/chunk_write.hpp"
#include "http/http_head.hpp"
#include "http/write_now.hpp"

namespace arbiter {

namespace {
// More pipelined bytes than this during a request and the rest are read
// and dropped: the connection then closes after the response (RFC 9112
// 9.3.2 lets a server close with pipelined requests unanswered). The read
// stays pending whatever was sent, so a client that leaves is seen at once
// (its FIN lies behind the bytes; a wait for socket errors misses it).
constexpr std::size_t kMaxPipelinedBytes = 64 * 1024;
}  // namespace

ClientConnection::ClientConnection(Stream& stream, beast::flat_buffer& buffer,
                                   Deadline& deadline, std::chrono::milliseconds write_timeout,
                                   const std::atomic<bool>& draining)
    : stream_(stream),
      buffer_(buffer),
      deadline_(deadline),
      write_timeout_(write_timeout),
      draining_(draining) {}

void ClientConnection::begin_request(bool keep_alive, bool chunked) {
  keep_alive_ = keep_alive;
  chunked_ = chunked;
  head_only_ = false;
  failed_ = false;
  body_bytes_ = 0;
  first_body_byte_at_.reset();
  abort_hook_ = nullptr;
  in_request_ = true;
  // Inside on_read the read restarts once the request first waits: a
  // request that arrived in one piece starts without a (futile) read.
  if (!in_read_handler_) read();
}

void ClientConnection::end_request() {
  in_request_ = false;
  abort_hook_ = nullptr;
}

const std::string& ClientConnection::remote_address() {
  if (!remote_address_) {
    beast::error_code ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    remote_address_ = ec ? std::string() : peer.address().to_string();
  }
  return *remote_address_;
}

void ClientConnection::mark_gone() {
  if (gone_) return;
  gone_ = true;
  if (auto hook = std::move(abort_hook_)) hook();
}

void ClientConnection::note_body(std::size_t n) {
  if (n > 0 && !first_body_byte_at_) first_body_byte_at_ = std::chrono::steady_clock::now();
  body_bytes_ += n;
}

Task<beast::error_code> ClientConnection::wait_for_bytes(std::size_t expected) {
  if (read_error_) co_return read_error_;
  expected_ = expected;
  read();
  auto [ec] = co_await net::async_initiate<decltype(kAsTuple), void(beast::error_code)>(
      [this](auto handler) { waiter_.emplace(std::move(handler)); }, kAsTuple);
  co_return ec;
}

// Plain completion handlers, not a coroutine: the read outlives requests,
// and a handler holding the owner costs less than a coroutine frame.
void ClientConnection::read() {
  if (reading_ || read_error_) return;
  reading_ = true;
  if (TlsStream* tls = stream_.tls()) {
    if (!tls_chunk_) tls_chunk_ = std::make_unique<std::array<char, 4096>>();
    tls->async_read_some(net::buffer(*tls_chunk_), [this, owner = owner_.lock()](const beast::error_code& ec,
                                                                                std::size_t n) {
      // A TLS client that closes without close_notify has left all the same.
      beast::error_code read_ec = ec;
      if (read_ec && read_ec == ssl::error::stream_truncated) read_ec = net::error::eof;
      if (!read_ec) {
        if (in_request_) {
          take_pipelined(tls_chunk_->data(), n);
        } else {
          buffer_.commit(net::buffer_copy(buffer_.prepare(n), net::buffer(tls_chunk_->data(), n)));
        }
      }
      on_read(read_ec);
    });
    return;
  }
  stream_.socket().async_wait(tcp::socket::wait_read, [this, owner = owner_.lock()](const beast::error_code& ec) {
    beast::error_code read_ec = ec;
    if (!read_ec) read_ready(read_ec);
    if (read_ec == net::error::would_block) {  // readiness that went away: wait again
      reading_ = false;
      read();
      return;
    }
    on_read(read_ec);
  });
}

void ClientConnection::read_ready(beast::error_code& ec) {
  tcp::socket& socket = stream_.socket();  // non-blocking (the server sets it)
  if (in_request_) {
    std::array<char, 4096> scratch;
    const std::size_t n = socket.read_some(net::buffer(scratch), ec);
    if (!ec) take_pipelined(scratch.data(), n);
    return;
  }
  // A request's bytes: room for a typical one, or for what is known to be
  // coming, read straight into the parser's buffer. At most 256 KiB ahead
  // of what arrived: a head announcing a large body that never comes must
  // not make the connection hold that much.
  constexpr std::size_t kReadBytes = 8 * 1024;
  constexpr std::size_t kMaxReadBytes = 256 * 1024;
  const std::size_t room = std::clamp(expected_, kReadBytes, kMaxReadBytes);
  const std::size_t n = socket.read_some(buffer_.prepare(room), ec);
  buffer_.commit(ec ? 0 : n);
}

void ClientConnection::take_pipelined(const char* data, std::size_t n) {
  if (buffer_.size() + n > kMaxPipelinedBytes) {
    dropped_pipelined_ = true;  // the bytes are lost: no next request on this connection
    return;
  }
  buffer_.commit(net::buffer_copy(buffer_.prepare(n), net::buffer(data, n)));
}

void ClientConnection::on_read(const beast::error_code& ec) {
  reading_ = false;
  expected_ = 0;
  if (ec) {
    read_error_ = ec;
    if (in_request_) mark_gone();  // EOF, reset or closed by a deadline: the client is gone
  }
  in_read_handler_ = true;
  if (waiter_) {
    // The server's session runs inline from here until it next waits.
    auto waiter = std::move(*waiter_);
    waiter_.reset();
    std::move(waiter)(ec);
  }
  in_read_handler_ = false;
  // A request in progress keeps a read pending: it sees the client leave.
  if (in_request_) read();
}

bool ClientConnection::write_at_once(std::span<const net::const_buffer> buffers, std::size_t& written) {
  if (gone_ || failed_) return false;
  beast::error_code ec;
  written = arbiter::write_at_once(stream_, buffers, ec);
  if (ec) {
    write_failed();
    return false;
  }
  return written == net::buffer_size(buffers);
}

Task<bool> ClientConnection::write_rest(std::span<const net::const_buffer> buffers, std::size_t written) {
  const WriteResult result = co_await arbiter::write_rest(stream_, buffers, written, deadline_, write_timeout_);
  if (!result) write_failed();
  co_return static_cast<bool>(result);
}

void ClientConnection::write_failed() {
  failed_ = true;
  mark_gone();
}

bool ClientConnection::response_keep_alive() {
  keep_alive_ = keep_alive_ && !dropped_pipelined_ && !draining_.load(std::memory_order_relaxed);
  return keep_alive_;
}

bool ClientConnection::stream_keep_alive() {
  if (!chunked_) keep_alive_ = false;  // an unframed stream's end is the connection's
  return response_keep_alive();
}

Task<bool> ClientConnection::send(http::response<http::string_body>& res) {
  if (gone_ || failed_) co_return false;
  res.keep_alive(response_keep_alive());
  res.prepare_payload();
  write_response_head(res, head_);
  const std::string_view body = head_only_ ? std::string_view() : std::string_view(res.body());
  const std::array<net::const_buffer, 2> buffers{net::buffer(head_), net::buffer(body)};
  if (std::size_t written = 0; !write_at_once(buffers, written)) {
    if (gone_ || failed_ || !co_await write_rest(buffers, written)) co_return false;
  }
  note_body(body.size());
  co_return true;
}

Task<bool> ClientConnection::send(const ResponseHead& head, std::string_view body) {
  if (gone_ || failed_) co_return false;
  write_response_head(head, body.size(), response_keep_alive(), head_);
  if (head_only_) body = {};
  const std::array<net::const_buffer, 2> buffers{net::buffer(head_), net::buffer(body)};
  if (std::size_t written = 0; !write_at_once(buffers, written)) {
    if (gone_ || failed_ || !co_await write_rest(buffers, written)) co_return false;
  }
  note_body(body.size());
  co_return true;
}

Task<bool> ClientConnection::start_stream(http::response<http::empty_body>& res) {
  if (gone_ || failed_) co_return false;
  res.keep_alive(stream_keep_alive());
  res.chunked(chunked_);
  write_response_head(res, head_);
  const net::const_buffer buffer = net::buffer(head_);
  const std::span<const net::const_buffer> buffers(&buffer, 1);
  if (std::size_t written = 0; !write_at_once(buffers, written)) {
    if (gone_ || failed_ || !co_await write_rest(buffers, written)) co_return false;
  }
  co_return true;
}

Task<bool> ClientConnection::start_stream(const ResponseHead& head) {
  co_return co_await write_stream(&head, {}, false);
}

Task<bool> ClientConnection::send_chunks(std::span<const std::string_view> pieces) {
  // Chunk framing by hand: "<hex size>\r\n<data>\r\n" per piece.
  constexpr std::size_t kMaxPieces = 64;
  std::size_t done = 0;
  while (done < pieces.size()) {
    const std::size_t n = std::min(kMaxPieces, pieces.size() - done);
    std::array<std::array<char, 20>, kMaxPieces> sizes;
    std::vector<net::const_buffer> buffers;
    buffers.reserve(n * 3);
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto piece = pieces[done + i];
      if (piece.empty()) continue;  // an empty chunk would end the body
      if (!chunked_) {
        buffers.emplace_back(piece.data(), piece.size());
        bytes += piece.size();
        continue;
      }
      const int len = std::snprintf(sizes[i].data(), sizes[i].size(), "%zx\r\n", piece.size());
      buffers.emplace_back(sizes[i].data(), static_cast<std::size_t>(len));
      buffers.emplace_back(piece.data(), piece.size());
      buffers.emplace_back("\r\n", 2);
      bytes += piece.size();
    }
    if (std::size_t written = 0; !buffers.empty() && !write_at_once(buffers, written)) {
      if (gone_ || failed_ || !co_await write_rest(buffers, written)) co_return false;
    }
    note_body(bytes);
    done += n;
  }
  co_return true;
}

Task<bool> ClientConnection::send_chunk(std::span<const std::string_view> parts) {
  co_return co_await write_stream(nullptr, parts, false);
}

Task<bool> ClientConnection::end_stream() {
  co_return co_await write_stream(nullptr, {}, true);
}

Task<bool> ClientConnection::write_stream(const ResponseHead* head, std::span<const std::string_view> parts,
                                          bool last) {
  if (gone_ || failed_) co_return false;
  if (head) {
    write_response_head(*head, chunked_ ? BodyFraming::kChunked : BodyFraming::kUntilClose, stream_keep_alive(),
                        head_);
  }
  ChunkWrite framed;
  frame_chunk_write(head ? std::string_view(head_) : std::string_view(), parts, last, stream_.tls() != nullptr,
                    chunk_copy_, framed, chunked_);
  const std::span<const net::const_buffer> buffers = framed.span();
  if (buffers.empty()) co_return true;
  if (std::size_t written = 0; !write_at_once(buffers, written)) {
    if (gone_ || failed_ || !co_await write_rest(buffers, written)) co_return false;
  }
  note_body(framed.body_bytes);
  co_return true;
}

}  // namespace arbiter
