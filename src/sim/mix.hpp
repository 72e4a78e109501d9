// splitmix64's finaliser: one well-mixed 64-bit value per input. The
// simulator's deterministic draws (fault decisions, output text, ids) all
// derive from it, so the same seed always gives the same run.
#pragma once

#include <cstdint>

namespace arbiter::sim {

constexpr std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace arbiter::sim
