// The `usage` object of a whole OpenAI response (chat.completion,
// text_completion; a Responses API response's input_tokens, output_tokens
// and input_tokens_details.cached_tokens): how many tokens a request really cost, for fairness
// charges, the token metrics and the usage ledger.
#pragma once

#include <optional>
#include <string_view>

#include "core/resume.hpp"

namespace arbiter {

// The last top-level-looking `"usage":{...}` of `body` with its
// prompt_tokens, completion_tokens and prompt_tokens_details.cached_tokens
// (0 when absent); nullopt when there is none or it is malformed. Searches
// from the end (engines put usage last) and reads only that object's
// integers: O(size), no allocation. A `"usage":` inside a generated string
// cannot match: JSON escapes its quotes.
std::optional<Usage> find_usage(std::string_view body);

// Whether an SSE event's data (event_data) is the usage chunk: a `usage`
// object and an empty `choices` list, as vLLM, SGLang and OpenAI send it
// last when asked (stream_options.include_usage; core/stream_usage.hpp).
bool is_usage_chunk(std::string_view data);

}  // namespace arbiter
