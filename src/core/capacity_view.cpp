#include "core/capacity_view.hpp"

#include <vector>

namespace arbiter::sched {

Occupancy occupancy_of(const Scheduler& scheduler, PoolId pool, BackendId backend) {
  Occupancy seen{.in_flight = scheduler.backend_in_flight(pool, backend)};
  const std::vector<ClassPolicy>& classes = scheduler.config().classes;
  uint32_t others = 0, all = 0;  // in flight on the pool
  for (ClassId k = 0; k < classes.size(); ++k) {
    const bool background = classes[k].background;
    const uint32_t running = scheduler.class_in_flight(pool, k);
    (background ? seen.background_waiting : seen.others_waiting) |= scheduler.ready_depth(pool, k) > 0;
    seen.others_running |= !background && running > 0;
    others += background ? 0 : running;
    all += running;
  }
  // The pool's mix on this backend (the scheduler counts classes per pool).
  seen.others_in_flight =
      all == 0 ? 0 : static_cast<uint32_t>(static_cast<uint64_t>(seen.in_flight) * others / all);
  return seen;
}

std::chrono::duration<double> pool_gap_target(const AdaptiveCapacityConfig& config,
                                              std::span<const Scheduler> schedulers, PoolId pool,
                                              std::vector<bool>& seen) {
  std::vector<std::chrono::duration<double>> bounds;
  if (schedulers.empty()) return gap_target(config, bounds);
  const std::vector<ClassPolicy>& classes = schedulers.front().config().classes;
  seen.resize(classes.size(), false);
  for (ClassId k = 0; k < classes.size(); ++k) {
    if (classes[k].background) continue;
    for (const Scheduler& s : schedulers) seen[k] = seen[k] || s.ready_depth(pool, k) + s.class_in_flight(pool, k) > 0;
    if (seen[k]) bounds.emplace_back(classes[k].tpot_slo);
  }
  return gap_target(config, bounds);
}

}  // namespace arbiter::sched
