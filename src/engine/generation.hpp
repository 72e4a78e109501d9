// How many tokens a simulated request generates: the engine takes that
// number as given (SubmitRequest::output_tokens); this is the deterministic
// rule a server can use to pick it from the OpenAI request fields.
#pragma once

#include <cstdint>

namespace arbiter::engine {

struct GenerationLimits {
  std::uint32_t max_tokens = 0;    // OpenAI max_tokens (or what is left of the context)
  std::uint32_t min_tokens = 0;    // vLLM min_tokens: EOS is suppressed before this many
  bool ignore_eos = false;         // vLLM ignore_eos: always generate max_tokens
  std::uint32_t natural_mean = 0;  // mean length the "model" would stop at on its own
  std::uint64_t seed = 0;          // same seed -> same length
};

// ignore_eos or natural_mean == 0: max_tokens. Otherwise a natural length drawn
// uniformly from [1, 2 * natural_mean - 1] by `seed`, clamped to
// [min_tokens, max_tokens]. Always at least 1 (vLLM samples at least one token).
std::uint32_t generation_length(const GenerationLimits& limits);

}  // namespace arbiter::engine
