// 64-bit mixing: splitmix64 and its finaliser, the one hash step shared by
// the scheduler's tables, rendezvous routing, request ids and the
// simulators' deterministic draws.
#pragma once

#include <cstdint>

namespace arbiter {

// splitmix64's finaliser: every input bit affects every output bit.
constexpr std::uint64_t mix_bits(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// splitmix64: the golden-ratio step, then the finaliser. One well-mixed
// value per input, no state to carry.
constexpr std::uint64_t splitmix64(std::uint64_t x) { return mix_bits(x + kGoldenGamma); }

}  // namespace arbiter
