#include "core/error.hpp"

#include <boost/json.hpp>

namespace arbiter {

ErrorMapping map_error(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidRequest: return {400, "invalid_request_error", "invalid_request", false};
    case ErrorCode::kInvalidJson: return {400, "invalid_request_error", "invalid_json", false};
    case ErrorCode::kUnauthorized: return {401, "authentication_error", "invalid_api_key", false};
    case ErrorCode::kForbidden: return {403, "permission_error", "forbidden", false};
    case ErrorCode::kNotFound: return {404, "invalid_request_error", "not_found", false};
    case ErrorCode::kModelNotFound: return {404, "invalid_request_error", "model_not_found", false};
    case ErrorCode::kMethodNotAllowed: return {405, "invalid_request_error", "method_not_allowed", false};
    case ErrorCode::kSuperseded: return {409, "invalid_request_error", "superseded", false};
    case ErrorCode::kPayloadTooLarge: return {413, "invalid_request_error", "request_too_large", false};
    case ErrorCode::kUnsupportedEncoding:
      return {415, "invalid_request_error", "unsupported_content_encoding", false};
    case ErrorCode::kHeadersTooLarge: return {431, "invalid_request_error", "headers_too_large", false};
    case ErrorCode::kRateLimited: return {429, "rate_limit_error", "rate_limit_exceeded", true};
    case ErrorCode::kOverloaded: return {429, "rate_limit_error", "overloaded", true};
    case ErrorCode::kInternal: return {500, "server_error", "internal_error", true};
    case ErrorCode::kUpstreamFailed: return {502, "server_error", "upstream_error", true};
    case ErrorCode::kNoBackend: return {503, "server_error", "no_backend_available", true};
    case ErrorCode::kBackendsDown: return {503, "server_error", "no_backend_available", true};
    case ErrorCode::kModelIsolated: return {503, "server_error", "model_unavailable", true};
    case ErrorCode::kShuttingDown: return {503, "server_error", "shutting_down", true};
    case ErrorCode::kTooManyConnections: return {503, "server_error", "too_many_connections", true};
    case ErrorCode::kUpstreamTimeout: return {504, "server_error", "upstream_timeout", true};
  }
  return {500, "server_error", "internal_error", true};
}

std::optional<std::chrono::milliseconds> ApiError::effective_retry_after() const {
  if (!map_error(code).retryable) return std::nullopt;
  return retry_after.value_or(kDefaultRetryAfter);
}

ApiError superseded_error() {
  return {ErrorCode::kSuperseded, "superseded by a newer request with the same key", {}, {}};
}

std::string error_body(const ApiError& error) {
  const ErrorMapping m = map_error(error.code);
  boost::json::object inner;
  inner["message"] = error.message;
  inner["type"] = m.type;
  inner["param"] = error.param ? boost::json::value(*error.param) : boost::json::value(nullptr);
  inner["code"] = m.code;
  boost::json::object outer;
  outer["error"] = std::move(inner);
  return boost::json::serialize(outer);
}

std::string retry_after_seconds(std::chrono::milliseconds wait) {
  const auto ms = wait.count() < 0 ? 0 : wait.count();
  return std::to_string((ms + 999) / 1000);
}

}  // namespace arbiter
