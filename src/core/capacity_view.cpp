#include "core/capacity_view.hpp"

#include <vector>

namespace arbiter::sched {

Occupancy occupancy_of(const Scheduler& scheduler, PoolId pool, BackendId backend) {
  Occupancy seen{.in_flight = scheduler.backend_in_flight(pool, backend)};
  const std::vector<ClassPolicy>& classes = scheduler.config().classes;
  for (ClassId k = 0; k < classes.size(); ++k) {
    const bool background = classes[k].background;
    (background ? seen.background_waiting : seen.others_waiting) |= scheduler.ready_depth(pool, k) > 0;
    if (!background) seen.others_running |= scheduler.class_in_flight(pool, k) > 0;
  }
  return seen;
}

std::chrono::duration<double> pool_gap_target(const AdaptiveCapacityConfig& config,
                                              std::span<const Scheduler> schedulers, PoolId pool) {
  std::vector<std::chrono::duration<double>> bounds;
  if (schedulers.empty()) return gap_target(config, bounds);
  const std::vector<ClassPolicy>& classes = schedulers.front().config().classes;
  for (ClassId k = 0; k < classes.size(); ++k) {
    if (classes[k].background) continue;
    bool active = false;
    for (const Scheduler& s : schedulers) active |= s.ready_depth(pool, k) + s.class_in_flight(pool, k) > 0;
    if (active) bounds.emplace_back(classes[k].tpot_slo);
  }
  return gap_target(config, bounds);
}

}  // namespace arbiter::sched
