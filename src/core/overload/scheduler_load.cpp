#include "core/overload/scheduler_load.hpp"

#include "core/capacity_view.hpp"

namespace arbiter::overload {

BackendView scheduler_view(const sched::Scheduler& scheduler, sched::PoolId pool, sched::BackendId backend,
                           sched::TimePoint now) {
  const sched::Occupancy seen = sched::occupancy_of(scheduler, pool, backend);
  BackendView view{.slots = scheduler.backend_limit(pool, backend),
                   .own_running = seen.others_in_flight,
                   .own_background = seen.in_flight - seen.others_in_flight,
                   .prefill_fill = scheduler.prefill_fill(pool, backend, now)};
  double queued = 0;
  const auto& classes = scheduler.config().classes;
  for (sched::ClassId k = 0; k < classes.size(); ++k) {
    if (!classes[k].background) queued += scheduler.queue_depth(pool, k);
  }
  const uint32_t capacity = scheduler.capacity(pool);
  view.queued = capacity == 0 ? queued : queued * view.slots / capacity;
  return view;
}

}  // namespace arbiter::overload
