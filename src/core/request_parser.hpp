// Parses an OpenAI request body once: validates the fields the gateway relies
// on, extracts RequestInfo and keeps the JSON for rewriting (caps) so the body
// is never parsed twice.
#pragma once

#include <expected>
#include <string_view>

#include <boost/json/object.hpp>

#include "core/error.hpp"
#include "core/request.hpp"

namespace arbiter {

struct ParsedRequest {
  RequestInfo info;
  boost::json::object body;  // the whole request, for rewriting
};

std::expected<ParsedRequest, ApiError> parse_request(Route route, std::string_view body);

// Characters per token used for estimates (the usual rule of thumb for
// English text with BPE tokenizers).
inline constexpr int64_t kCharsPerToken = 4;
int64_t estimate_tokens(std::size_t chars);

// Makes the request ask for at most `cap` tokens: rewrites max_tokens (or
// max_completion_tokens, whichever the client used) when it is above the cap
// or absent. Returns true when the body changed.
bool apply_max_tokens_cap(ParsedRequest& request, int64_t cap);

}  // namespace arbiter
