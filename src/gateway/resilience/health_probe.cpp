#include "gateway/resilience/health_probe.hpp"

#include <boost/json.hpp>

namespace arbiter {

namespace {

// The probe's request and answer on an open connection, plain or TLS.
template <class S>
Task<std::string> exchange(S& stream, const ProbeTarget& target) {
  http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
  req.set(http::field::host, target.host + ":" + std::to_string(target.port));
  req.set(http::field::content_type, "application/json");
  req.set("x-arbiter-probe", "1");
  if (!target.authorization.empty()) req.set(http::field::authorization, target.authorization);
  req.body() = boost::json::serialize(
      boost::json::object{{"model", target.model}, {"prompt", "ping"}, {"max_tokens", 1}, {"stream", false}});
  req.prepare_payload();
  if (auto [ec, n] = co_await http::async_write(stream, req, kAsTuple); ec) {
    co_return ec == beast::error::timeout ? "timeout" : "write";
  }
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  if (auto [ec, n] = co_await http::async_read(stream, buffer, res, kAsTuple); ec) {
    co_return ec == beast::error::timeout ? "timeout" : "read";
  }
  if (res.result_int() != 200) co_return "status " + std::to_string(res.result_int());
  co_return std::string();
}

}  // namespace

Task<std::string> probe_backend(const ProbeTarget& target, std::chrono::milliseconds timeout) {
  const auto executor = co_await net::this_coro::executor;
  tcp::resolver resolver(executor);
  auto [rec, endpoints] =
      co_await resolver.async_resolve(target.host, std::to_string(target.port), kAsTuple);
  if (rec) co_return "resolve";
  beast::tcp_stream stream(executor);
  stream.expires_after(timeout);  // one deadline for the whole exchange
  if (auto [ec, ep] = co_await stream.async_connect(endpoints, kAsTuple); ec) {
    co_return ec == beast::error::timeout ? "timeout" : "connect";
  }
  std::string failure;
  if (target.tls) {
    ssl::stream<beast::tcp_stream&> tls(stream, *target.tls);
    prepare_client_handshake(tls.native_handle(), target.host);
    auto [ec] = co_await tls.async_handshake(ssl::stream_base::client, kAsTuple);
    if (ec == beast::error::timeout) co_return "timeout";
    if (ec) {
      failure = "tls: " + handshake_failure(tls.native_handle(), ec);
      co_return failure;
    }
    failure = co_await exchange(tls, target);
  } else {
    failure = co_await exchange(stream, target);
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return failure;
}

}  // namespace arbiter
