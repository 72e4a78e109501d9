#include "support/http_client.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

namespace arbiter::test {

namespace net = boost::asio;
namespace http = boost::beast::http;
using net::ip::tcp;
using boost::system::error_code;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  const std::string key = lower(name);
  for (const auto& [k, v] : headers) {
    if (k == key) return v;
  }
  return std::nullopt;
}

boost::json::value HttpResponse::json() const { return boost::json::parse(body); }

struct HttpConnection::Impl {
  net::io_context ioc;
  tcp::socket sock{ioc};
  boost::beast::flat_buffer buf;
  std::optional<http::response_parser<http::string_body>> parser;

  // Runs one asynchronous operation to completion or until the deadline,
  // when it is cancelled and TimeoutError thrown.
  template <class Start>
  error_code run(Start start, Millis timeout, const char* what) {
    std::optional<error_code> result;
    start([&result](error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run_for(timeout);
    if (!result) {
      error_code ignored;
      sock.cancel(ignored);
      ioc.restart();
      ioc.run();
      throw TimeoutError(std::string("HttpConnection: timed out ") + what);
    }
    return *result;
  }

  void new_parser() {
    parser.emplace();
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
  }
};

HttpConnection::HttpConnection(uint16_t port, Millis connect_timeout) : HttpConnection(port, "", connect_timeout) {}

HttpConnection::HttpConnection(uint16_t port, const std::string& source, Millis connect_timeout)
    : impl_(std::make_unique<Impl>()) {
  const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), port);
  if (!source.empty()) {
    impl_->sock.open(tcp::v4());
    impl_->sock.bind(tcp::endpoint(net::ip::make_address(source), 0));
  }
  const auto ec = impl_->run([&](auto handler) { impl_->sock.async_connect(ep, handler); },
                             connect_timeout, "connecting");
  if (ec) throw std::runtime_error("HttpConnection: connect to port " + std::to_string(port) +
                                   " failed: " + ec.message());
  impl_->sock.set_option(tcp::no_delay(true));
}

HttpConnection::~HttpConnection() = default;

void HttpConnection::send(const HttpRequest& request, Millis timeout) {
  http::request<http::string_body> req;
  req.method_string(request.method);
  req.target(request.target);
  req.version(11);
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [k, v] : request.headers) req.set(k, v);
  req.body() = request.body;
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    req.prepare_payload();
  }
  impl_->new_parser();
  error_ = std::nullopt;
  returned_ = 0;
  const auto ec = impl_->run([&](auto handler) { http::async_write(impl_->sock, req, handler); },
                             timeout, "writing the request");
  if (ec) throw std::runtime_error("HttpConnection: write failed: " + ec.message());
}

void HttpConnection::send_raw(std::string_view bytes, Millis timeout) {
  impl_->new_parser();
  error_ = std::nullopt;
  returned_ = 0;
  const auto ec = impl_->run(
      [&](auto handler) { net::async_write(impl_->sock, net::buffer(bytes.data(), bytes.size()), handler); },
      timeout, "writing raw bytes");
  if (ec) throw std::runtime_error("HttpConnection: write failed: " + ec.message());
}

HttpResponse HttpConnection::read_head(Millis timeout) {
  if (!impl_->parser) throw std::logic_error("HttpConnection: read_head before send");
  const auto ec = impl_->run(
      [&](auto handler) { http::async_read_header(impl_->sock, impl_->buf, *impl_->parser, handler); },
      timeout, "reading the response header");
  if (ec) throw std::runtime_error("HttpConnection: reading the response header failed: " + ec.message());
  HttpResponse out;
  const auto& res = impl_->parser->get();
  out.status = static_cast<int>(res.result_int());
  for (const auto& f : res) out.headers.emplace_back(lower(f.name_string()), std::string(f.value()));
  return out;
}

std::optional<std::string> HttpConnection::read_some(Millis timeout) {
  if (!impl_->parser) throw std::logic_error("HttpConnection: read_some before send");
  auto& parser = *impl_->parser;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto& body = parser.get().body();
    if (body.size() > returned_) {
      std::string piece = body.substr(returned_);
      returned_ = body.size();
      return piece;
    }
    if (parser.is_done() || error_) return std::nullopt;
    const auto left = std::max(Millis(1), std::chrono::duration_cast<Millis>(deadline - Clock::now()));
    const auto ec = impl_->run(
        [&](auto handler) { http::async_read_some(impl_->sock, impl_->buf, parser, handler); }, left,
        "reading the response body");
    if (ec) error_ = ec.message();
  }
}

std::vector<std::string> HttpConnection::read_events(std::size_t n, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto events = split_sse_events(body());
    if (events.size() >= n) return events;
    const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() <= 0) throw TimeoutError("HttpConnection: timed out waiting for SSE events");
    if (!read_some(left)) return events;
  }
}

std::string HttpConnection::read_rest(Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() <= 0) throw TimeoutError("HttpConnection: timed out reading the body");
    if (!read_some(left)) return body();
  }
}

HttpResponse HttpConnection::request(const HttpRequest& request, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  send(request, timeout);
  auto left = [&] { return std::max(Millis(1), std::chrono::duration_cast<Millis>(deadline - Clock::now())); };
  HttpResponse out = read_head(left());
  out.body = read_rest(left());
  if (error_) throw std::runtime_error("HttpConnection: body ended early: " + *error_);
  return out;
}

const std::string& HttpConnection::body() const {
  static const std::string kEmpty;
  return impl_->parser ? impl_->parser->get().body() : kEmpty;
}

bool HttpConnection::complete() const { return impl_->parser && impl_->parser->is_done(); }

void HttpConnection::close_abruptly(bool reset) {
  error_code ec;
  if (reset) impl_->sock.set_option(net::socket_base::linger(true, 0), ec);
  impl_->sock.close(ec);
}

HttpResponse http_call(uint16_t port, const HttpRequest& request, Millis timeout) {
  HttpConnection conn(port, timeout);
  return conn.request(request, timeout);
}

HttpResponse http_get(uint16_t port, std::string target, Headers headers, Millis timeout) {
  HttpRequest req;
  req.method = "GET";
  req.target = std::move(target);
  req.headers = std::move(headers);
  return http_call(port, req, timeout);
}

HttpResponse http_post(uint16_t port, std::string target, std::string body, Headers headers,
                       Millis timeout) {
  headers.emplace_back("content-type", "application/json");
  return http_call(port,
                   {.method = "POST", .target = std::move(target), .headers = std::move(headers),
                    .body = std::move(body)},
                   timeout);
}

std::vector<std::string> split_sse_events(std::string_view body) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto end = body.find("\n\n", start);
    if (end == std::string_view::npos) break;
    out.emplace_back(body.substr(start, end + 2 - start));
    start = end + 2;
  }
  return out;
}

}  // namespace arbiter::test
