#include "gateway/backend_capacity.hpp"

#include <span>

#include "core/capacity_view.hpp"

namespace arbiter {

BackendCapacity::BackendCapacity(const Config& config, SchedulerLink dispatcher,
                                 const std::vector<std::unique_ptr<ModelPool>>& pools, BackendHealth& health,
                                 GatewayMetrics& metrics, Clock::time_point now)
    : config_(config),
      dispatcher_(dispatcher),
      pools_(pools),
      health_(health) {
  backends_.resize(config.models.size());
  gap_classes_.resize(config.models.size());
  for (std::size_t p = 0; p < config.models.size(); ++p) {
    const ModelConfig& model = config.models[p];
    if (!config.adaptive_capacity_of(p).enabled) continue;  // its backends keep max_concurrency
    for (const BackendConfig& b : model.backends) {
      backends_[p].push_back(
          {.controller = sched::CapacityController(config.adaptive_capacity_of(p), b.max_concurrency, now),
           .limit_gauge = &metrics.backend_slot_limit.with({model.name, b.name}),
           .extra_gauge = &metrics.backend_extra_slots.with({model.name, b.name}),
           .gap_target_gauge = &metrics.backend_gap_target.with({model.name, b.name}),
           .ups = &metrics.backend_limit_changes.with({model.name, b.name, "up"}),
           .downs = &metrics.backend_limit_changes.with({model.name, b.name, "down"})});
    }
  }
  // The start applies at once: it differs from max_concurrency when the
  // latter is outside [min, max].
  for (uint32_t p = 0; p < backends_.size(); ++p) {
    for (uint32_t b = 0; b < backends_[p].size(); ++b) publish(p, b, backends_[p][b].controller.limit());
  }
}

void BackendCapacity::observe(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal,
                              const EngineLoad& load, Clock::time_point now) {
  if (backends_[pool].empty()) return;  // not adaptive
  std::lock_guard lock(mu_);
  Backend& b = backends_[pool][backend];
  const sched::AdaptiveCapacityConfig& settings = config_.adaptive_capacity_of(pool);
  StreamGaps& gaps = pools_[pool]->gaps(backend);
  const sched::GapCounts counted = gaps.take();
  const uint32_t before = b.controller.limit();
  if (signal.stale || signal.down) {
    b.controller = sched::CapacityController(settings, config_.models[pool].backends[backend].max_concurrency, now);
    if (b.controller.limit() != before) publish(pool, backend, before);
    return;
  }
  sched::Occupancy occupancy;
  std::chrono::duration<double> target{};
  dispatcher_.inspect([&](const sched::Scheduler& s) {
    occupancy = sched::occupancy_of(s, pool, backend);
    target = sched::pool_gap_target(settings, std::span(&s, 1), pool, gap_classes_[pool]);
  });
  gaps.set_target(std::chrono::duration_cast<StreamGaps::Clock::duration>(target));
  b.gap_target_gauge->set(target.count());
  b.controller.engine(load.waiting.value_or(0), load.kv_usage.value_or(0), load.running.value_or(0));
  b.controller.gaps(counted);
  b.controller.occupancy(occupancy);
  if (b.controller.update(now)) publish(pool, backend, before);
}

void BackendCapacity::carry_from(const BackendCapacity& old, uint32_t from, uint32_t to) {
  std::scoped_lock lock(mu_, old.mu_);
  const auto& was = old.backends_[from];
  auto& is = backends_[to];
  if (was.size() != is.size()) return;  // adaptive in one and not the other
  for (uint32_t b = 0; b < is.size(); ++b) {
    const uint32_t before = is[b].controller.limit();
    is[b].controller = was[b].controller;
    publish(to, b, before);
  }
}

void BackendCapacity::publish(uint32_t pool, uint32_t backend, uint32_t before) {
  Backend& b = backends_[pool][backend];
  const sched::CapacityController& c = b.controller;
  b.limit_gauge->set(c.base());
  b.extra_gauge->set(c.extra());
  if (c.limit() > before) b.ups->inc();
  if (c.limit() < before) b.downs->inc();
  health_.set_capacity(pool, backend, c.base(), c.extra(), c.engine_share());
}

}  // namespace arbiter
