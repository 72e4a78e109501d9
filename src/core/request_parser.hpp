// Parses an OpenAI request body once: validates the fields the gateway relies
// on and extracts RequestInfo in one pass over the text, building no JSON
// document. The document is built from the same text only when a request is
// rewritten (caps, engine priority, resume), so a request forwarded as sent
// never pays for it.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "core/error.hpp"
#include "core/request.hpp"

namespace arbiter {

class ParsedRequest {
 public:
  RequestInfo info;
  std::string text;  // the body as the client sent it: never changed

  // The body as a JSON object, parsed from `text` on first use. Rewrites
  // (apply_max_tokens_cap, the engine priority) go here, not into `text`.
  // Lazily built: a memo, hence mutable behind the const overload.
  boost::json::object& body();
  const boost::json::object& body() const;

 private:
  mutable std::optional<boost::json::object> body_;
};

std::expected<ParsedRequest, ApiError> parse_request(Route route, std::string body);

// Characters per token used for estimates (the usual rule of thumb for
// English text with BPE tokenizers).
inline constexpr int64_t kCharsPerToken = 4;
int64_t estimate_tokens(std::size_t chars);

// Makes the request ask for at most `cap` tokens: rewrites max_tokens (or
// max_completion_tokens, whichever the client used) when it is above the cap
// or absent. Returns true when the body changed.
bool apply_max_tokens_cap(ParsedRequest& request, int64_t cap);

}  // namespace arbiter
