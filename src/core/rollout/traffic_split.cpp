#include "core/rollout/traffic_split.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace arbiter::rollout {

uint64_t sticky_hash(std::string_view alias, std::string_view key) {
  const uint64_t salt = XXH3_64bits(alias.data(), alias.size());
  return XXH3_64bits_withSeed(key.data(), key.size(), salt);
}

std::size_t pick_target(std::span<const double> weights, uint64_t hash) {
  double total = 0;
  for (const double w : weights) total += w > 0 ? w : 0;
  const double point = unit_point(hash) * total;
  double upto = 0;
  std::size_t last = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    upto += weights[i];
    last = i;
    if (point < upto) return i;
  }
  return last;  // rounding at the very top
}

}  // namespace arbiter::rollout
