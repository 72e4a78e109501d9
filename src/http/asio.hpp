// Short names for the Asio/Beast types the network layer uses everywhere.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace arbiter {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
template <class T = void>
using Task = boost::asio::awaitable<T>;

// Completion token that reports errors as values: expected I/O failures
// (peer gone, timeout) are part of the request path, not exceptions.
inline constexpr auto kAsTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace arbiter
