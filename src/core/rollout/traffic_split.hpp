// Which of an alias's targets a request goes to: a weighted draw from a
// hash of its sticky key (the same key, the same target while the weights
// stand), so replicas agree without sharing state.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace arbiter::rollout {

// The sticky key's hash, salted with the alias's name (two aliases split
// one session independently).
uint64_t sticky_hash(std::string_view alias, std::string_view key);

// A hash as a point in [0, 1): its top 53 bits, uniform for a uniform hash.
inline double unit_point(uint64_t hash) { return static_cast<double>(hash >> 11) * 0x1.0p-53; }

// The target whose share of the weights' total holds the hash's point in
// [0, 1); weights <= 0 take none. Requires a positive total.
std::size_t pick_target(std::span<const double> weights, uint64_t hash);

}  // namespace arbiter::rollout
