#include "engine/generation.hpp"

#include <algorithm>

#include "core/mix.hpp"

namespace arbiter::engine {

namespace {

// One well-mixed draw per seed, no state to carry.
std::uint64_t mix(std::uint64_t x) { return splitmix64(x); }

}  // namespace

std::uint32_t generation_length(const GenerationLimits& limits) {
  const std::uint32_t upper = std::max<std::uint32_t>(limits.max_tokens, 1);
  if (limits.ignore_eos || limits.natural_mean == 0) return upper;
  const std::uint64_t span = 2ULL * limits.natural_mean - 1;
  const auto natural = static_cast<std::uint32_t>(1 + mix(limits.seed) % span);
  const std::uint32_t lower = std::clamp<std::uint32_t>(limits.min_tokens, 1, upper);
  return std::clamp(natural, lower, upper);
}

}  // namespace arbiter::engine
