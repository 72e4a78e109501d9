// What adaptive capacity (adaptive_capacity.hpp) reads of the scheduler, in
// one place for both of its callers: the gateway's monitor (one scheduler)
// and arbiter-bench's virtual run (one scheduler per gateway replica).
#pragma once

#include <chrono>
#include <span>
#include <vector>

#include "core/adaptive_capacity.hpp"
#include "core/scheduler.hpp"

namespace arbiter::sched {

// One backend's slots as `scheduler` sees them now.
Occupancy occupancy_of(const Scheduler& scheduler, PoolId pool, BackendId backend);

// The gap target of a pool's backends until the next tick: gap_target()
// over the `tpot_slo`s of the non-background classes that have had work
// queued or running on the pool in any of `schedulers` (which share one
// config). `seen` (per class, kept by the caller between calls) remembers
// them: once a class has had work on a pool its bound holds there, or a
// class of short requests that come and go would flip the target between
// scrapes, and the limit with it (docs/benchmarks.md, issue 41).
std::chrono::duration<double> pool_gap_target(const AdaptiveCapacityConfig& config,
                                              std::span<const Scheduler> schedulers, PoolId pool,
                                              std::vector<bool>& seen);

}  // namespace arbiter::sched
