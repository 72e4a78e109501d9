// One error enum for everything the gateway answers by itself, mapped to an
// HTTP status and an OpenAI-shaped error body in exactly one place.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter {

enum class ErrorCode {
  kInvalidRequest,     // 400: a field is missing or has the wrong type
  kInvalidJson,        // 400: the body is not JSON
  kUnauthorized,       // 401: missing or unknown API key
  kForbidden,          // 403: tenant may not use what it asked for
  kNotFound,           // 404: no such route
  kModelNotFound,      // 404: model not served by this gateway
  kMethodNotAllowed,   // 405
  kSuperseded,         // 409: a newer request with the same supersede key replaced it
  kPayloadTooLarge,    // 413: body over the configured limit
  kUnsupportedEncoding,// 415: a Content-Encoding (gzip, ...) the gateway does not decode
  kHeadersTooLarge,    // 431: header block over the configured limit
  kRateLimited,        // 429: queue or quota full
  kOverloaded,         // 429: shed by staged degradation (the pool is past its shedding threshold)
  kInternal,           // 500: a bug; never expected
  kUpstreamFailed,     // 502: engine refused, reset or sent garbage
  kNoBackend,          // 503: no backend could take the request in time
  kBackendsDown,       // 503: every backend of its pool is down (fail-fast)
  kModelIsolated,      // 503: the model's breaker isolates it for a back-off
  kShuttingDown,       // 503: gateway is draining
  kTooManyConnections, // 503: listener.max_connections reached
  kUpstreamTimeout,    // 504: engine did not answer in time
};

// How an ErrorCode looks on the wire.
struct ErrorMapping {
  int status;                // HTTP status code
  std::string_view type;     // OpenAI error.type
  std::string_view code;     // OpenAI error.code (machine-readable)
  bool retryable;            // carries Retry-After; clients may retry
};

ErrorMapping map_error(ErrorCode code);

// An error the gateway answers with. retry_after is set by whoever knows the
// real wait (queue drain time, backoff); retryable errors without one get a
// short default rather than a made-up long constant.
struct ApiError {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::optional<std::string> param;  // the offending request field, if any
  std::optional<std::chrono::milliseconds> retry_after;

  int status() const { return map_error(code).status; }
  // The Retry-After to send, or nullopt for non-retryable errors.
  std::optional<std::chrono::milliseconds> effective_retry_after() const;
};

inline constexpr std::chrono::milliseconds kDefaultRetryAfter{1000};

// A request a newer one with the same supersede key replaced (the
// dispatcher, before it runs; the relay, while it streams).
ApiError superseded_error();

// {"error":{"message":...,"type":...,"param":...,"code":...}}
std::string error_body(const ApiError& error);

// Retry-After header value in whole seconds, rounded up (RFC 9110 wants an
// integer); retry-after-ms carries the exact figure for the OpenAI SDKs.
std::string retry_after_seconds(std::chrono::milliseconds wait);

}  // namespace arbiter
