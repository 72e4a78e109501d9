#include "http/client_connection.hpp"

#include <array>
#include <cstdio>

#include "http/http_head.hpp"

namespace arbiter {

namespace {
// More pipelined bytes than this and the watcher stops reading until the
// request ends.
constexpr std::size_t kMaxPipelinedBytes = 64 * 1024;
constexpr std::size_t kWatchReadBytes = 4096;
}  // namespace

ClientConnection::ClientConnection(tcp::socket& socket, beast::flat_buffer& buffer,
                                   Deadline& deadline, std::chrono::milliseconds write_timeout,
                                   const std::atomic<bool>& draining)
    : socket_(socket),
      buffer_(buffer),
      deadline_(deadline),
      write_timeout_(write_timeout),
      draining_(draining),
      watch_done_(socket.get_executor()) {}

void ClientConnection::begin_request(bool keep_alive) {
  keep_alive_ = keep_alive;
  failed_ = false;
  body_bytes_ = 0;
  first_body_byte_at_.reset();
  abort_hook_ = nullptr;
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

void ClientConnection::start_watch() {
  watching_ = true;
  watch_done_.expires_at(net::steady_timer::time_point::max());
  watch();
}

Task<void> ClientConnection::stop_watch() {
  if (!watching_) co_return;
  beast::error_code ignored;
  socket_.cancel(ignored);
  co_await watch_done_.async_wait(kAsTuple);
}

// Plain completion handlers, not a coroutine: the watch runs once per
// request and a spawned coroutine (frame, awaitable thread, spawn handler)
// costs more than the read it waits on. An async read rather than a
// readiness wait: Asio queues it without any syscall when the last read
// emptied the socket, where a wait would re-arm the descriptor with an
// epoll_ctl on every request. It only completes when the client really sent
// bytes or left.
void ClientConnection::watch() {
  if (buffer_.size() >= kMaxPipelinedBytes) {
    // Too many pipelined bytes: stop reading until the request ends; the
    // next request is parsed from the buffer then.
    socket_.async_wait(tcp::socket::wait_error, [this](const beast::error_code&) { watch_ended(); });
    return;
  }
  socket_.async_read_some(buffer_.prepare(kWatchReadBytes), [this](const beast::error_code& ec, std::size_t n) {
    if (ec) {
      if (ec != net::error::operation_aborted) mark_gone();  // EOF or reset: the client left
      watch_ended();
      return;
    }
    buffer_.commit(n);  // a pipelined request: kept for the next parse
    watch();
  });
}

void ClientConnection::watch_ended() {
  watching_ = false;
  watch_done_.cancel();
}

bool ClientConnection::write_done(const beast::error_code& ec) {
  const bool timed_out = deadline_.disarm();
  if (timed_out || ec) {
    failed_ = true;
    mark_gone();
    return false;
  }
  return true;
}

Task<bool> ClientConnection::write_buffers(std::span<const net::const_buffer> buffers) {
  if (gone_ || failed_) co_return false;
  deadline_.arm(socket_, write_timeout_);
  auto [ec, n] = co_await net::async_write(socket_, buffers, kAsTuple);
  co_return write_done(ec);
}

Task<bool> ClientConnection::send(http::response<http::string_body>& res) {
  if (gone_ || failed_) co_return false;
  res.keep_alive(keep_alive_ && !draining_.load(std::memory_order_relaxed));
  keep_alive_ = res.keep_alive();
  res.prepare_payload();
  write_response_head(res, head_);
  const std::array<net::const_buffer, 2> buffers{net::buffer(head_), net::buffer(res.body())};
  if (!co_await write_buffers(buffers)) co_return false;
  note_body(res.body().size());
  co_return true;
}

Task<bool> ClientConnection::start_stream(http::response<http::empty_body>& res) {
  if (gone_ || failed_) co_return false;
  res.keep_alive(keep_alive_ && !draining_.load(std::memory_order_relaxed));
  keep_alive_ = res.keep_alive();
  res.chunked(true);
  write_response_head(res, head_);
  const net::const_buffer buffer = net::buffer(head_);
  co_return co_await write_buffers(std::span(&buffer, 1));
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
      const int len = std::snprintf(sizes[i].data(), sizes[i].size(), "%zx\r\n", piece.size());
      buffers.emplace_back(sizes[i].data(), static_cast<std::size_t>(len));
      buffers.emplace_back(piece.data(), piece.size());
      buffers.emplace_back("\r\n", 2);
      bytes += piece.size();
    }
    if (!buffers.empty() && !co_await write_buffers(buffers)) co_return false;
    note_body(bytes);
    done += n;
  }
  co_return true;
}

Task<bool> ClientConnection::end_stream() {
  static constexpr std::string_view kLastChunk = "0\r\n\r\n";
  const net::const_buffer b(kLastChunk.data(), kLastChunk.size());
  co_return co_await write_buffers(std::span(&b, 1));
}

}  // namespace arbiter
