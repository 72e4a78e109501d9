// What the gateway learns from a request body: parsed once, used by the
// classifier, the caps and (later) the scheduler.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter {

// kResponses: OpenAI's Responses API (`input`, `instructions`,
// `max_output_tokens`; streamed as typed events), which vLLM serves.
enum class Route { kChatCompletions, kCompletions, kEmbeddings, kResponses };

std::string_view route_path(Route route);
std::optional<Route> route_from_path(std::string_view path);

// Output tokens assumed for a request that sets no max_tokens: the
// scheduler's cost estimate and the quota reservation (both reconciled with
// the real usage when the request ends).
inline constexpr int64_t kDefaultOutputEstimate = 256;

// a x b for a >= 0 and b >= 1, INT64_MAX where that would overflow.
inline int64_t saturating_product(int64_t a, int64_t b) { return a > INT64_MAX / b ? INT64_MAX : a * b; }

struct RequestInfo {
  Route route = Route::kChatCompletions;
  std::string model;
  bool stream = false;
  bool include_usage = false;              // stream_options.include_usage
  std::optional<int64_t> max_tokens;       // as requested (max_tokens or max_completion_tokens)
  // The answers the engine generates, each up to max_tokens: `n`, times the
  // prompts of a /v1/completions batch (`prompt` as a list of prompts).
  int64_t choices = 1;
  int64_t prompt_tokens_estimate = 0;      // ~4 characters per token
  std::optional<std::string> user;         // the OpenAI `user` field, when a string
  // What makes the answer repeatable (core/cache/cache_policy.hpp):
  // temperature 0 or a seed; tools and log probabilities are answers a
  // cache does not replay by default.
  bool greedy = false;      // temperature given as 0
  bool seeded = false;      // an integer seed
  bool tools = false;       // `tools` or `functions` given (not null)
  bool logprobs = false;    // log probabilities asked for
  // Where the prompt (`messages` or `prompt`, by route) starts in the body's
  // text; npos when unknown. Prefix affinity hashes from there.
  std::size_t prompt_at = std::string::npos;

  // Prompt estimate plus max_tokens (or kDefaultOutputEstimate) for each of
  // the choices. Saturates: an uncapped class lets max_tokens reach 2^63 - 1.
  int64_t cost_estimate() const {
    if (route == Route::kEmbeddings) return prompt_tokens_estimate;  // an embedding generates nothing
    const int64_t each = max_tokens.value_or(kDefaultOutputEstimate);
    const int64_t output = saturating_product(each, choices);
    return output > INT64_MAX - prompt_tokens_estimate ? INT64_MAX : prompt_tokens_estimate + output;
  }
};

}  // namespace arbiter
