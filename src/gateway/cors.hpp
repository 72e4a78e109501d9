// Cross-origin requests from browser apps (docs/configuration.md, `cors`;
// the Fetch standard's CORS protocol). A browser first asks with an OPTIONS
// preflight whether a POST from its page's origin may carry these headers;
// then every answer tells it whether the page may read it. Off (no header
// added, OPTIONS answered 405 as before) while no origin is allowed.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.hpp"

namespace arbiter {

class Cors {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  explicit Cors(const CorsConfig& config);

  bool enabled() const { return any_ || !origins_.empty(); }

  // The headers that let the page of `origin` (the request's Origin) read an
  // answer: appended to `out`. Nothing for a request without an Origin (not
  // from a browser) or from an origin not allowed.
  void add_answer_headers(std::string_view origin, Headers& out) const;

  // A preflight's answer headers (the gateway answers 200 with them), or why
  // it is refused (the gateway answers 403 saying so). `method` and
  // `headers` are the request's Access-Control-Request-Method and -Headers;
  // the headers asked for are allowed as asked (the gateway reads only the
  // ones it knows, and the OpenAI SDKs send headers of their own), once
  // checked to be a plain list of field names.
  std::expected<Headers, std::string> preflight(std::string_view origin, std::string_view method,
                                                std::string_view headers,
                                                std::string_view methods_allowed) const;

 private:
  // The value of Access-Control-Allow-Origin for `origin`, if allowed.
  std::optional<std::string> allow_origin(std::string_view origin) const;
  // What every answer to an allowed origin says of it: Allow-Origin (`allowed`,
  // its value), Vary and, with credentials, Allow-Credentials.
  void add_origin_headers(const std::string& allowed, Headers& out) const;

  std::vector<std::string> origins_;  // as configured; compared without regard to case
  bool any_ = false;                  // "*"
  bool credentials_ = false;
  std::string max_age_;  // seconds, as text
};

}  // namespace arbiter
