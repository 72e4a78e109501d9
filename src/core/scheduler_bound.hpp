// The scheduler's comparisons of slot counts with fractional products
// (share x capacity, bound x slots): a count at the product, give or take
// rounding, is within it. Shared by the dispatch decisions and the LoRA
// routing (scheduler_dispatch.cpp, scheduler_lora.cpp). Pure.
#pragma once

#include <cstdint>

namespace arbiter::sched {

inline constexpr double kSlotEpsilon = 1e-9;

// Bounded loads (Scheduler::affinity_bound): whether a backend of `slots`
// slots holding `load` in use, the request's included, is within `bound`
// per slot.
inline bool within_affinity_bound(uint64_t load, double bound, uint32_t slots) {
  return static_cast<double>(load) <= bound * slots + kSlotEpsilon;
}

}  // namespace arbiter::sched
