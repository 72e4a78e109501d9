#include <algorithm>
#include "core/scheduler_config.hpp"

#include <cmath>

namespace arbiter::sched {

std::optional<Policy> policy_from_string(std::string_view name) {
  if (name == "fifo") return Policy::kFifo;
  if (name == "priority") return Policy::kPriority;
  if (name == "hybrid") return Policy::kHybrid;
  return std::nullopt;
}

std::string_view policy_name(Policy policy) {
  switch (policy) {
    case Policy::kFifo:
      return "fifo";
    case Policy::kPriority:
      return "priority";
    case Policy::kHybrid:
      return "hybrid";
  }
  return "hybrid";
}

namespace {

bool is_fraction(double x) { return std::isfinite(x) && x >= 0 && x <= 1; }

}  // namespace

void set_tenant_limits(SchedulerConfig& config, TenantId tenant, double weight, uint32_t max_running,
                       double max_share) {
  if (weight != 1) config.tenant_weights[tenant] = weight;
  if (max_running > 0) config.tenant_max_running[tenant] = max_running;
  if (max_share > 0) config.tenant_max_share[tenant] = max_share;
}

std::optional<std::string> validate(const SchedulerConfig& config) {
  if (config.classes.empty()) return "scheduler: no classes";
  if (config.classes.size() > 255) return "scheduler: more than 255 classes";
  if (config.pools.empty()) return "scheduler: no pools";
  if (config.pools.size() >= (1u << 24)) return "scheduler: too many pools";
  double guaranteed = 0;
  for (const ClassPolicy& c : config.classes) {
    const std::string where = "class '" + c.name + "': ";
    if (!is_fraction(c.min_share)) return where + "min_share must be in [0, 1]";
    if (!is_fraction(c.max_share) || c.max_share <= 0) return where + "max_share must be in (0, 1]";
    if (c.min_share > c.max_share) return where + "min_share above max_share";
    if (!std::isfinite(c.weight) || c.weight <= 0) return where + "weight must be > 0";
    if (c.max_queue_wait <= Duration::zero()) return where + "max_queue_wait must be > 0";
    if (c.debounce < Duration::zero() || c.debounce >= c.max_queue_wait) {
      return where + "debounce must be >= 0 and shorter than max_queue_wait";
    }
    if (c.max_queue == 0 || c.max_queue_per_tenant == 0) return where + "queue limits must be > 0";
    if (c.ttft_slo < Duration::zero()) return where + "ttft_slo must be >= 0";
    if (c.tpot_slo < Duration::zero()) return where + "tpot_slo must be >= 0";
    if (c.background && c.min_share > 0) return where + "a background class has no min_share";
    guaranteed += c.min_share;
  }
  if (guaranteed > 1 + 1e-9) return "scheduler: min_shares add up to more than 1";
  for (const PoolSpec& p : config.pools) {
    if (p.max_concurrency.empty()) return "pool '" + p.name + "': no backends";
    for (uint32_t limit : p.max_concurrency) {
      if (limit == 0) return "pool '" + p.name + "': max_concurrency must be > 0";
    }
    if (p.prefix_cache_tokens.size() > p.max_concurrency.size())
      return "pool '" + p.name + "': more prefix cache sizes than backends";
    if (p.prefill_tokens_per_s.size() > p.max_concurrency.size())
      return "pool '" + p.name + "': more prefill rates than backends";
    for (double rate : p.prefill_tokens_per_s) {
      if (!(rate >= 0) || !std::isfinite(rate))
        return "pool '" + p.name + "': prefill_tokens_per_s must be >= 0";
    }
    if (p.adapters.size() > p.max_concurrency.size() || p.max_loras.size() > p.max_concurrency.size())
      return "pool '" + p.name + "': more adapter lists than backends";
    for (const auto& served : p.adapters) {
      if (std::find(served.begin(), served.end(), 0) != served.end())
        return "pool '" + p.name + "': adapter numbers start at 1";
    }
    for (uint32_t slots : p.max_loras) {
      if (slots == 0) return "pool '" + p.name + "': max_loras must be > 0";
    }
    for (std::size_t i = 0; i < p.lenders.size(); ++i) {
      const PoolId lender = p.lenders[i];
      if (lender >= config.pools.size()) return "pool '" + p.name + "': lender is not a pool";
      if (&config.pools[lender] == &p) return "pool '" + p.name + "': a pool cannot lend to itself";
      if (std::find(p.lenders.begin(), p.lenders.begin() + i, lender) != p.lenders.begin() + i)
        return "pool '" + p.name + "': lender '" + config.pools[lender].name + "' named twice";
    }
  }
  if (!is_fraction(config.aging_fraction)) return "scheduler: aging_fraction must be in [0, 1]";
  if (!(config.early_reject_margin >= 0) || !std::isfinite(config.early_reject_margin))
    return "scheduler: early_reject_margin must be >= 0";
  if (!(config.affinity_load_slack >= 0) || !std::isfinite(config.affinity_load_slack))
    return "scheduler: affinity_load_slack must be >= 0";
  if (!is_fraction(config.slo_lead_fraction)) return "scheduler: slo_lead_fraction must be in [0, 1]";
  if (!(config.tenant_headroom >= 0 && config.tenant_headroom <= 0.5))
    return "scheduler: tenant_headroom must be in [0, 0.5]";
  if (!(config.tenant_fair_cap >= 0 && config.tenant_fair_cap <= 100))
    return "scheduler: tenant_fair_cap must be in [0, 100]";
  if (config.rate_window <= Duration::zero()) return "scheduler: rate_window must be > 0";
  if (config.preempt_after < Duration::zero()) return "scheduler: preempt_after must be >= 0";
  if (config.preempt_guard < Duration::zero()) return "scheduler: preempt_guard must be >= 0";
  if (config.max_prefill_backlog < Duration::zero())
    return "scheduler: max_prefill_backlog must be >= 0";
  if (!(config.fallback_tokens_per_slot_second > 0)) {
    return "scheduler: fallback_tokens_per_slot_second must be > 0";
  }
  if (config.min_retry_after.count() < 0 || config.max_retry_after < config.min_retry_after) {
    return "scheduler: need 0 <= min_retry_after <= max_retry_after";
  }
  for (const auto& [tenant, weight] : config.tenant_weights) {
    if (!std::isfinite(weight) || weight <= 0) return "scheduler: tenant weights must be > 0";
  }
  for (const auto& [tenant, share] : config.tenant_max_share) {
    if (!(share > 0 && share <= 1)) return "scheduler: a tenant's max_share must be in (0, 1]";
  }
  return std::nullopt;
}

}  // namespace arbiter::sched
