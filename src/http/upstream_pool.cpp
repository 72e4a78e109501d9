#include "http/upstream_pool.hpp"

#include "http/io_pool.hpp"
#include "http/outbound_connection.hpp"

#include <sys/socket.h>


namespace arbiter {

namespace {
// Connections idle longer than this are checked with a peek before reuse;
// fresher ones are just used (a stale one costs a retry, not an error).
constexpr auto kPeekAfterIdle = std::chrono::seconds(2);

// A pooled connection is usable if the peer has neither closed it nor sent
// unsolicited bytes. One non-blocking peek.
bool looks_alive(tcp::socket& s) {
  char byte;
  const auto n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
}  // namespace

UpstreamPool::UpstreamPool(std::string host, uint16_t port, std::size_t max_idle,
                           std::size_t threads, std::chrono::milliseconds idle_ttl, TlsContext tls)
    : host_(std::move(host)),
      port_(port),
      host_header_(host_ + ":" + std::to_string(port)),
      endpoint_(literal_endpoint(host_, port_)),
      max_idle_(max_idle),
      idle_ttl_(idle_ttl),
      tls_(std::move(tls)),
      lists_(std::max<std::size_t>(threads, 1)) {
}

UpstreamPool::IdleList& UpstreamPool::local() {
  return lists_[IoPool::current_index() % lists_.size()];
}

PooledConnection UpstreamPool::take_idle() {
  const auto now = std::chrono::steady_clock::now();
  IdleList& list = local();
  std::lock_guard lock(list.mu);
  while (!list.idle.empty()) {
    Idle idle = std::move(list.idle.back());
    list.idle.pop_back();
    const auto idle_for = now - idle.since;
    if (idle_for < idle_ttl_ && (idle_for < kPeekAfterIdle || looks_alive(idle.conn->stream.socket()))) {
      idle.conn->reused = true;
      return std::move(idle.conn);
    }
    idle.conn->stream.close();
  }
  return nullptr;
}

Task<std::expected<PooledConnection, ConnectError>> UpstreamPool::connect(Deadline& deadline,
                                                                            std::chrono::milliseconds connect_timeout) {
  auto executor = co_await net::this_coro::executor;
  tcp::socket socket(executor);
  tcp::resolver resolver(executor);
  const auto endpoints = co_await outbound_endpoints(resolver, host_, port_, endpoint_);
  if (!endpoints) co_return std::unexpected(ConnectError{ConnectFailure::kResolve, {}});
  deadline.arm(socket, connect_timeout);
  auto [ec, endpoint] = co_await net::async_connect(socket, *endpoints, kAsTuple);
  if (deadline.disarm()) co_return std::unexpected(ConnectError{ConnectFailure::kTimeout, {}});
  if (ec) co_return std::unexpected(ConnectError{ConnectFailure::kRefused, {}});
  beast::error_code ignored;
  // Registered with the reactor anew: the connect left write interest on,
  // and then every wait for readability (the relay's, between a stream's
  // events) would also wake the loop because the socket is writable.
  const tcp::socket::native_handle_type fd = socket.release(ignored);
  if (!ignored) socket.assign(endpoint.protocol(), fd, ignored);
  socket.set_option(tcp::no_delay(true), ignored);
  socket.non_blocking(true, ignored);  // the relay writes at once (write_now)
  if (!tls_) co_return std::make_unique<UpstreamConnection>(Stream(std::move(socket)));
  auto conn = std::make_unique<UpstreamConnection>(Stream(std::move(socket), *tls_));
  TlsStream& tls = *conn->stream.tls();
  prepare_client_handshake(tls.native_handle(), host_);
  // The handshake shares the connect deadline: it is part of opening.
  deadline.arm(conn->stream.socket(), connect_timeout);
  auto [handshake_ec] = co_await tls.async_handshake(ssl::stream_base::client, kAsTuple);
  if (deadline.disarm()) co_return std::unexpected(ConnectError{ConnectFailure::kTimeout, {}});
  if (handshake_ec) co_return std::unexpected(ConnectError{ConnectFailure::kTls, handshake_failure(tls.native_handle(), handshake_ec)});
  co_return std::move(conn);
}

void UpstreamPool::release(PooledConnection conn) {
  IdleList& list = local();
  std::lock_guard lock(list.mu);
  if (list.idle.size() >= max_idle_) return;  // socket closes on destruction
  conn->buffer.shrink_to_fit();  // empty between responses: an idle connection holds no read buffer
  list.idle.push_back({std::move(conn), std::chrono::steady_clock::now()});
}

}  // namespace arbiter
