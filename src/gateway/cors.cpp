#include "gateway/cors.hpp"

#include <algorithm>
#include <cctype>

#include <boost/beast/core/string.hpp>

namespace arbiter {

namespace {

// A field-name list as browsers send it: tokens (RFC 9110 5.6.2) separated
// by commas and spaces, bounded. Anything else is not echoed back.
bool plain_field_list(std::string_view s) {
  constexpr std::size_t kMaxLength = 2048;
  if (s.size() > kMaxLength) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == ',' || c == ' ' ||
           c == '!' || c == '#' || c == '$' || c == '%' || c == '&' || c == '\'' || c == '*' ||
           c == '+' || c == '^' || c == '`' || c == '|' || c == '~';
  });
}

// What a page may read of an answer beyond the CORS-safelisted fields: the
// request's id (the OpenAI SDKs read it), Retry-After, the rate-limit
// fields and the gateway's own.
constexpr std::string_view kExposed =
    "x-request-id, retry-after, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, "
    "x-ratelimit-reset-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, "
    "x-ratelimit-reset-tokens, x-arbiter-class, x-arbiter-backend, x-arbiter-queue-ms, "
    "x-arbiter-wait-reason, "
    "x-arbiter-preemptions, x-arbiter-retries, x-arbiter-max-tokens-capped, x-arbiter-degraded, "
    "x-arbiter-model, "
    "x-arbiter-breaker, x-arbiter-traffic-stage";

}  // namespace

Cors::Cors(const CorsConfig& config)
    : credentials_(config.allow_credentials), max_age_(std::to_string(config.max_age.count())) {
  for (const std::string& o : config.allowed_origins) {
    if (o == "*") {
      any_ = true;
    } else {
      origins_.push_back(o);
    }
  }
}

std::optional<std::string> Cors::allow_origin(std::string_view origin) const {
  if (origin.empty()) return std::nullopt;
  const auto same = [origin](const std::string& o) { return boost::beast::iequals(o, origin); };
  if (std::any_of(origins_.begin(), origins_.end(), same)) return std::string(origin);
  if (any_) return std::string("*");
  return std::nullopt;
}

void Cors::add_answer_headers(std::string_view origin, Headers& out) const {
  if (!enabled()) return;
  const auto allowed = allow_origin(origin);
  if (!allowed) return;
  add_origin_headers(*allowed, out);
  out.emplace_back("access-control-expose-headers", std::string(kExposed));
}

void Cors::add_origin_headers(const std::string& allowed, Headers& out) const {
  out.emplace_back("access-control-allow-origin", allowed);
  // An answer that names the origin differs by origin: caches must know.
  if (allowed != "*") out.emplace_back("vary", "Origin");
  if (credentials_) out.emplace_back("access-control-allow-credentials", "true");
}

std::expected<Cors::Headers, std::string> Cors::preflight(std::string_view origin,
                                                          std::string_view method,
                                                          std::string_view headers,
                                                          std::string_view methods_allowed) const {
  if (origin.empty()) return std::unexpected(std::string("a preflight needs an Origin"));
  const auto allowed = allow_origin(origin);
  if (!allowed) {
    // The origin as given, within bounds: it goes into an error message.
    return std::unexpected("origin '" + std::string(origin.substr(0, 256)) +
                           "' is not in cors.allowed_origins");
  }
  if (method.empty())
    return std::unexpected(std::string("a preflight needs an Access-Control-Request-Method"));
  if (!plain_field_list(headers)) {
    return std::unexpected(
        std::string("Access-Control-Request-Headers is not a list of field names"));
  }
  Headers out;
  add_origin_headers(*allowed, out);
  out.emplace_back("access-control-allow-methods", std::string(methods_allowed));
  if (!headers.empty()) out.emplace_back("access-control-allow-headers", std::string(headers));
  out.emplace_back("access-control-max-age", max_age_);
  return out;
}

}  // namespace arbiter
