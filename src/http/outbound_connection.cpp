#include "http/outbound_connection.hpp"

#include "http/ip_literal.hpp"

namespace arbiter {

std::string_view outbound_failure_name(OutboundFailure failure) {
  switch (failure) {
    case OutboundFailure::kNone: return "";
    case OutboundFailure::kTimeout: return "timeout";
    case OutboundFailure::kResolve: return "resolve";
    case OutboundFailure::kConnect: return "connect";
    case OutboundFailure::kTls: return "tls";
    case OutboundFailure::kClosed: return "closed";
    case OutboundFailure::kRead: return "read";
  }
  return "";
}

std::optional<tcp::endpoint> literal_endpoint(const std::string& host, uint16_t port) {
  if (const auto address = ip_literal(host)) return tcp::endpoint(*address, port);
  return std::nullopt;
}

Task<std::optional<std::vector<tcp::endpoint>>> outbound_endpoints(tcp::resolver& resolver, const std::string& host,
                                                                   uint16_t port,
                                                                   const std::optional<tcp::endpoint>& literal) {
  std::vector<tcp::endpoint> endpoints;
  if (literal) {
    endpoints.push_back(*literal);
    co_return endpoints;
  }
  auto [ec, results] = co_await resolver.async_resolve(host, std::to_string(port), kAsTuple);
  if (ec) co_return std::nullopt;
  for (const auto& r : results) endpoints.push_back(r.endpoint());
  co_return endpoints;
}

OutboundConnection::OutboundConnection(const net::any_io_executor& executor, std::string host, uint16_t port,
                                       TlsContext tls)
    : host_(std::move(host)),
      port_(port),
      tls_(std::move(tls)),
      literal_(literal_endpoint(host_, port_)),
      socket_(executor),
      resolver_(executor),
      deadline_(executor) {}

void OutboundConnection::close() {
  closed_ = true;
  beast::error_code ignored;
  socket_.close(ignored);  // a TLS layer over it fails with it
  resolver_.cancel();
  deadline_.cancel();
}

void OutboundConnection::arm(std::chrono::milliseconds timeout) {
  ++request_;
  timed_out_ = false;
  closed_ = false;
  deadline_.expires_after(timeout);
  deadline_.async_wait([weak = weak_from_this(), id = request_](const beast::error_code& ec) {
    if (ec) return;
    const auto live = weak.lock();
    if (!live || live->request_ != id) return;
    live->timed_out_ = true;
    beast::error_code ignored;
    live->socket_.close(ignored);
    live->resolver_.cancel();
  });
}

Task<bool> OutboundConnection::handshake(OutboundResponse& out) {
  tls_stream_ = std::make_unique<ssl::stream<tcp::socket&>>(socket_, *tls_);
  prepare_client_handshake(tls_stream_->native_handle(), host_);
  auto [ec] = co_await tls_stream_->async_handshake(ssl::stream_base::client, kAsTuple);
  if (!ec) co_return true;
  if (!timed_out_) out.tls_detail = handshake_failure(tls_stream_->native_handle(), ec);
  beast::error_code ignored;
  socket_.close(ignored);
  out.failure = timed_out_ ? OutboundFailure::kTimeout : OutboundFailure::kTls;
  co_return false;
}

Task<bool> OutboundConnection::open(OutboundResponse& out) {
  const auto endpoints = co_await outbound_endpoints(resolver_, host_, port_, literal_);
  if (!endpoints) {
    out.failure = timed_out_ ? OutboundFailure::kTimeout : OutboundFailure::kResolve;
    co_return false;
  }
  // One address at a time: a deadline that closes the socket must end the
  // attempt, not move on to the next address.
  for (const auto& endpoint : *endpoints) {
    if (timed_out_ || closed_) break;
    auto [ec] = co_await socket_.async_connect(endpoint, kAsTuple);
    if (!ec) {
      beast::error_code ignored;
      socket_.set_option(tcp::no_delay(true), ignored);
      buffer_.clear();
      tls_stream_.reset();
      out.connected = true;
      if (!tls_) co_return true;
      co_return co_await handshake(out);
    }
    beast::error_code ignored;
    socket_.close(ignored);
  }
  out.failure = timed_out_ ? OutboundFailure::kTimeout : OutboundFailure::kConnect;
  co_return false;
}

template <class Body>
Task<beast::error_code> OutboundConnection::write(const http::request<Body>& req) {
  if (tls_stream_) {
    auto [ec, n] = co_await http::async_write(*tls_stream_, req, kAsTuple);
    co_return ec;
  }
  auto [ec, n] = co_await http::async_write(socket_, req, kAsTuple);
  co_return ec;
}

Task<beast::error_code> OutboundConnection::read(http::response_parser<http::string_body>& parser) {
  if (tls_stream_) {
    auto [ec, n] = co_await http::async_read(*tls_stream_, buffer_, parser, kAsTuple);
    co_return ec;
  }
  auto [ec, n] = co_await http::async_read(socket_, buffer_, parser, kAsTuple);
  co_return ec;
}

template <class Body>
Task<OutboundResponse> OutboundConnection::request(const http::request<Body>& req, std::chrono::milliseconds timeout,
                                                   uint64_t body_limit) {
  OutboundResponse out{.failure = OutboundFailure::kClosed};
  arm(timeout);
  for (int round = 0; round < 2; ++round) {
    const bool reused = socket_.is_open();
    if (!reused && !co_await open(out)) break;
    if (closed_) {
      out.failure = OutboundFailure::kClosed;
      break;
    }
    const beast::error_code write_ec = co_await write(req);
    http::response_parser<http::string_body> parser;
    parser.body_limit(body_limit);
    beast::error_code read_ec = write_ec;
    if (!write_ec) read_ec = co_await read(parser);  // if, not ?: around co_await (GCC 12)
    if (read_ec) {
      beast::error_code ignored;
      socket_.close(ignored);
      if (reused && !parser.got_some() && !timed_out_ && !closed_) continue;  // closed while idle
      if (timed_out_)
        out.failure = OutboundFailure::kTimeout;
      else if (read_ec == http::error::end_of_stream || write_ec || closed_)
        out.failure = OutboundFailure::kClosed;
      else
        out.failure = OutboundFailure::kRead;
      break;
    }
    out.response = parser.release();
    if (!out.response.keep_alive()) {
      beast::error_code ignored;
      socket_.close(ignored);
    }
    out.failure = OutboundFailure::kNone;
    break;
  }
  deadline_.cancel();
  co_return out;
}

template Task<OutboundResponse> OutboundConnection::request(const http::request<http::empty_body>&,
                                                            std::chrono::milliseconds, uint64_t);
template Task<OutboundResponse> OutboundConnection::request(const http::request<http::string_body>&,
                                                            std::chrono::milliseconds, uint64_t);

}  // namespace arbiter
