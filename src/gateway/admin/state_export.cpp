#include "gateway/admin/state_export.hpp"

#include <array>

#include <algorithm>

#include "core/tenants.hpp"

namespace arbiter {

void export_scheduler_state(const sched::Scheduler& s, const Config& config,
                            const std::unordered_map<std::string, std::vector<std::size_t>>& pool_index,
                            GatewayMetrics& metrics, ShownTenantQueues& shown) {
  const auto& counters = s.counters();
  // A model with per-class pools sums its pools per class (a class runs
  // in one of them).
  for (const auto& [name, pools] : pool_index) {
    for (std::size_t c = 0; c < config.classes.size(); ++c) {
      const auto klass = static_cast<sched::ClassId>(c);
      uint32_t depth = 0, in_flight = 0;
      for (const std::size_t p : pools) {
        depth += s.queue_depth(static_cast<sched::PoolId>(p), klass);
        in_flight += s.class_in_flight(static_cast<sched::PoolId>(p), klass);
      }
      metrics.queue_depth.with({name, config.classes[c].name}).set(depth);
      metrics.class_in_flight.with({name, config.classes[c].name}).set(in_flight);
    }
    uint64_t guard_held = 0;
    for (const std::size_t p : pools) guard_held += counters.guard_held[p];
    metrics.preemptions_guard_held.with({name}).set(guard_held);
  }
  for (std::size_t p = 0; p < config.models.size(); ++p) {
    const auto& model = config.models[p];
    for (std::size_t b = 0; b < model.backends.size(); ++b) {
      metrics.backend_in_flight.with({model.name, model.backends[b].name})
          .set(s.backend_in_flight(static_cast<sched::PoolId>(p), static_cast<sched::BackendId>(b)));
      metrics.backend_prefix_cache.with({model.name, model.backends[b].name})
          .set(static_cast<double>(s.prefix_cache(static_cast<sched::PoolId>(p), static_cast<sched::BackendId>(b))));
    }
  }
  ShownTenantQueues now;
  for (const auto& d : s.tenant_queue_depths()) {
    const std::string_view tenant =
        d.tenant < config.tenants.size() ? std::string_view(config.tenants[d.tenant].name) : kAnonymousTenant;
    metrics::Gauge& g = metrics.tenant_queue_depth.with({config.models[d.pool].name, config.classes[d.klass].name, tenant});
    g.set(d.queued);
    now.push_back(&g);
  }
  std::ranges::sort(now);
  for (metrics::Gauge* g : shown) {
    if (!std::ranges::binary_search(now, g)) g->set(0);  // its queue emptied since
  }
  shown = std::move(now);
  for (std::size_t c = 0; c < counters.classes.size() && c < config.classes.size(); ++c) {
    const auto& k = counters.classes[c];
    const std::string_view name = config.classes[c].name;
    const std::pair<std::string_view, uint64_t> events[] = {
        {"enqueued", k.enqueued},
        {"dispatched", k.dispatched},
        {"completed", k.completed},
        {"rejected_class_full", k.rejected_class_full},
        {"rejected_tenant_full", k.rejected_tenant_full},
        {"rejected_predicted", k.rejected_predicted},
        {"cancelled_queued", k.cancelled_queued},
        {"cancelled_in_flight", k.cancelled_in_flight},
        {"superseded_queued", k.superseded_queued},
        {"superseded_in_flight", k.superseded_in_flight},
        {"preempted", k.preempted},
        {"expired", k.expired},
        {"rejected_no_backend", k.rejected_no_backend},
        {"no_backend", k.no_backend},
        {"borrowed", k.borrowed},
        {"reclaimed", k.reclaimed},
        {"over_fair_share", k.over_fair_share},
        {"carried_over", k.carried_over},
    };
    for (const auto& [event, value] : events) {
      metrics.scheduler_events.with({name, event}).set(value);
    }
  }
  metrics.stale_dispatches.set(counters.stale_dispatches);
}

void export_monitor_state(const BackendMonitor& monitor, const Config& config, GatewayMetrics& metrics,
                          ExportedMonitorCounts& exported) {
  const auto snapshot = monitor.snapshot();
  exported.resize(snapshot.size());
  std::size_t i = 0;
  for (const auto& b : snapshot) {
    const std::string_view model = config.models[b.pool].name;
    metrics.backend_saturated.with({model, b.name}).set(b.signal.saturated ? 1 : 0);
    metrics.backend_signal_stale.with({model, b.name}).set(b.signal.stale ? 1 : 0);
    metrics.backend_down.with({model, b.name}).set(b.signal.down ? 1 : 0);
    // Added as they grew since the last export: the totals go on across
    // config reloads, whose monitors count from 0.
    std::array<uint64_t, 4>& last = exported[i++];
    const std::array<uint64_t, 4> now{b.counters.stale_transitions, b.counters.scrapes_ok, b.counters.scrapes_failed,
                                      b.counters.scrapes_unusable};
    metrics.backend_stale_total.with({model, b.name}).inc(now[0] - last[0]);
    metrics.backend_scrapes.with({model, b.name, "ok"}).inc(now[1] - last[1]);
    metrics.backend_scrapes.with({model, b.name, "failed"}).inc(now[2] - last[2]);
    metrics.backend_scrapes.with({model, b.name, "unusable"}).inc(now[3] - last[3]);
    last = now;
    if (b.state.load.waiting) metrics.engine_waiting.with({model, b.name}).set(*b.state.load.waiting);
    if (b.state.load.kv_usage) metrics.engine_kv_usage.with({model, b.name}).set(*b.state.load.kv_usage);
  }
}

}  // namespace arbiter
