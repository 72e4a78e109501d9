// Runs one I/O operation with a deadline. When the deadline passes first the
// socket is closed, which makes the pending operation (including Beast's
// composed HTTP operations) finish at once with an error. The caller then
// treats the socket as dead.
#pragma once

#include <chrono>
#include <optional>
#include <variant>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include "http/asio.hpp"

namespace arbiter {

namespace detail {
template <class Socket>
Task<void> close_on_expiry(net::steady_timer& timer, Socket& socket) {
  auto [ec] = co_await timer.async_wait(kAsTuple);
  if (!ec) {
    beast::error_code ignored;
    socket.close(ignored);
  }
}
}  // namespace detail

// nullopt: the deadline passed and `socket` was closed.
template <class T, class Socket>
Task<std::optional<T>> with_timeout(Socket& socket, std::chrono::steady_clock::duration limit,
                                    Task<T> op) {
  using namespace boost::asio::experimental::awaitable_operators;
  net::steady_timer timer(co_await net::this_coro::executor, limit);
  auto result = co_await (std::move(op) || detail::close_on_expiry(timer, socket));
  if (result.index() == 0) co_return std::get<0>(std::move(result));
  co_return std::nullopt;
}

}  // namespace arbiter
