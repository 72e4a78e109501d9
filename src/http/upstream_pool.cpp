#include "http/upstream_pool.hpp"

#include <sys/socket.h>

#include "http/timeout.hpp"

namespace arbiter {

namespace {
// A pooled connection is usable if the peer has neither closed it nor sent
// unsolicited bytes. One non-blocking peek: cheaper than a failed request.
bool looks_alive(tcp::socket& s) {
  char byte;
  const auto n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
}  // namespace

UpstreamPool::UpstreamPool(std::string host, uint16_t port, std::size_t max_idle,
                           std::chrono::milliseconds idle_ttl)
    : host_(std::move(host)), port_(port), max_idle_(max_idle), idle_ttl_(idle_ttl) {
  beast::error_code ec;
  const auto addr = net::ip::make_address(host_, ec);
  if (!ec) endpoint_ = tcp::endpoint(addr, port_);
}

std::optional<tcp::socket> UpstreamPool::take_idle() {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  while (!idle_.empty()) {
    Idle idle = std::move(idle_.back());
    idle_.pop_back();
    if (now - idle.since < idle_ttl_ && looks_alive(idle.socket)) return std::move(idle.socket);
    beast::error_code ignored;
    idle.socket.close(ignored);
  }
  return std::nullopt;
}

Task<std::expected<UpstreamConnection, ConnectFailure>> UpstreamPool::acquire(
    std::chrono::milliseconds connect_timeout, bool fresh) {
  if (!fresh) {
    if (auto s = take_idle()) co_return UpstreamConnection{std::move(*s), true};
  }
  auto executor = co_await net::this_coro::executor;
  tcp::socket socket(executor);
  std::vector<tcp::endpoint> endpoints;
  if (endpoint_) {
    endpoints.push_back(*endpoint_);
  } else {
    tcp::resolver resolver(executor);
    auto [ec, results] = co_await resolver.async_resolve(host_, std::to_string(port_), kAsTuple);
    if (ec) co_return std::unexpected(ConnectFailure::kResolve);
    for (const auto& r : results) endpoints.push_back(r.endpoint());
  }
  auto r = co_await with_timeout(socket, connect_timeout,
                                 net::async_connect(socket, endpoints, kAsTuple));
  if (!r) co_return std::unexpected(ConnectFailure::kTimeout);
  if (std::get<0>(*r)) co_return std::unexpected(ConnectFailure::kRefused);
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  co_return UpstreamConnection{std::move(socket), false};
}

void UpstreamPool::release(tcp::socket socket) {
  std::lock_guard lock(mu_);
  if (idle_.size() >= max_idle_) return;  // socket closes on destruction
  idle_.push_back({std::move(socket), std::chrono::steady_clock::now()});
}

std::size_t UpstreamPool::idle_count() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

}  // namespace arbiter
