#include "gateway/resilience/health_probe.hpp"

#include <boost/json.hpp>

#include "http/outbound_connection.hpp"

namespace arbiter {

namespace {

// An answer to a 1-token completion is small; more is not an engine's.
constexpr uint64_t kMaxProbeBodyBytes = 1u << 20;

}  // namespace

Task<std::string> probe_backend(const ProbeTarget& target, std::chrono::milliseconds timeout) {
  http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
  req.set(http::field::host, target.host + ":" + std::to_string(target.port));
  req.set(http::field::content_type, "application/json");
  req.set("x-arbiter-probe", "1");
  if (!target.authorization.empty()) req.set(http::field::authorization, target.authorization);
  req.body() = boost::json::serialize(
      boost::json::object{{"model", target.model}, {"prompt", "ping"}, {"max_tokens", 1}, {"stream", false}});
  req.prepare_payload();
  // A fresh connection per probe, closed after its answer.
  const auto connection =
      std::make_shared<OutboundConnection>(co_await net::this_coro::executor, target.host, target.port, target.tls);
  const OutboundResponse answer = co_await connection->request(req, timeout, kMaxProbeBodyBytes);
  connection->close();
  if (answer.failure == OutboundFailure::kTls) co_return "tls: " + answer.tls_detail;
  if (answer.failure != OutboundFailure::kNone) co_return std::string(outbound_failure_name(answer.failure));
  if (answer.response.result_int() != 200) co_return "status " + std::to_string(answer.response.result_int());
  co_return std::string();
}

}  // namespace arbiter
