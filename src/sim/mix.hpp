// splitmix64 (core/mix.hpp): one well-mixed 64-bit value per input. The
// simulator's deterministic draws (fault decisions, output text, ids) all
// derive from it, so the same seed always gives the same run.
#pragma once

#include <cstdint>

#include "core/mix.hpp"

namespace arbiter::sim {

constexpr std::uint64_t mix(std::uint64_t x) { return splitmix64(x); }

}  // namespace arbiter::sim
