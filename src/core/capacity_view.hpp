// What adaptive capacity (adaptive_capacity.hpp) reads of the scheduler, in
// one place for both of its callers: the gateway's monitor (one scheduler)
// and arbiter-bench's virtual run (one scheduler per gateway replica).
#pragma once

#include <chrono>
#include <span>

#include "core/adaptive_capacity.hpp"
#include "core/scheduler.hpp"

namespace arbiter::sched {

// One backend's slots as `scheduler` sees them now.
Occupancy occupancy_of(const Scheduler& scheduler, PoolId pool, BackendId backend);

// The gap target of a pool's backends until the next tick: gap_target()
// over the bounds (`class_bounds_s`, seconds per class, 0: none) of the
// non-background classes with work queued or running on the pool in any of
// `schedulers`.
std::chrono::duration<double> pool_gap_target(const AdaptiveCapacityConfig& config,
                                              std::span<const Scheduler> schedulers, PoolId pool,
                                              std::span<const double> class_bounds_s);

}  // namespace arbiter::sched
