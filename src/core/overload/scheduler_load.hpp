// What the load coefficient (load_coefficient.hpp) reads of the scheduler,
// in one place for both of its callers: the gateway's OverloadControl (one
// scheduler) and arbiter-bench's virtual run (one per gateway replica).
#pragma once

#include "core/overload/load_coefficient.hpp"
#include "core/scheduler.hpp"

namespace arbiter::overload {

// The gateway's part of one backend's view: its slot limit now, this
// gateway's requests running there (background apart), its part of the
// pool's non-background queue (by its share of the pool's slots) and its
// prefill queue's fill. The engine's fields are left to the caller.
BackendView scheduler_view(const sched::Scheduler& scheduler, sched::PoolId pool, sched::BackendId backend,
                           sched::TimePoint now);

}  // namespace arbiter::overload
