#include "gateway/scheduler_setup.hpp"

#include <algorithm>

namespace arbiter {

sched::SchedulerConfig to_scheduler_config(const Config& config) {
  sched::SchedulerConfig out;
  static_cast<sched::SchedulerTunables&>(out) = config.scheduler;
  for (const auto& c : config.classes) out.classes.push_back(c.policy);
  for (std::size_t p = 0; p < config.models.size(); ++p) {
    const ModelConfig& m = config.models[p];
    // With adaptive capacity BackendCapacity's limit applies (through
    // BackendHealth), up to its ceiling: max_concurrency is where it starts.
    const sched::AdaptiveCapacityConfig& adaptive = config.adaptive_capacity_of(p);
    sched::PoolSpec pool{.name = m.pool_name(), .max_concurrency = {}, .prefill_tokens_per_s = {}, .prefix_cache_tokens = {}};
    for (const auto& b : m.backends) {
      pool.max_concurrency.push_back(adaptive.enabled ? std::max(b.max_concurrency, adaptive.max_limit)
                                                      : b.max_concurrency);
      pool.prefill_tokens_per_s.push_back(b.prefill_tokens_per_s);
      pool.prefix_cache_tokens.push_back(b.prefix_cache_tokens);
      pool.max_loras.push_back(b.max_loras);
      auto& served = pool.adapters.emplace_back();
      for (const std::string& name : b.adapters) served.push_back(config.adapter_number(name));
    }
    out.pools.push_back(std::move(pool));
  }
  // Borrowing: every other pool of the same model that lends.
  for (std::size_t p = 0; p < config.models.size(); ++p) {
    for (std::size_t l = 0; l < config.models.size(); ++l) {
      if (l != p && config.models[l].lends && config.models[l].name == config.models[p].name) {
        out.pools[p].lenders.push_back(static_cast<sched::PoolId>(l));
      }
    }
  }
  for (std::size_t i = 0; i < config.tenants.size(); ++i) {
    const TenantConfig& t = config.tenants[i];
    sched::set_tenant_limits(out, static_cast<sched::TenantId>(i), t.weight, t.max_running, t.max_share);
  }
  return out;
}

sched::TenantId tenant_id(const Config& config, const TenantConfig* tenant) {
  if (tenant == nullptr) return static_cast<sched::TenantId>(config.tenants.size());
  return static_cast<sched::TenantId>(tenant - config.tenants.data());
}

}  // namespace arbiter
