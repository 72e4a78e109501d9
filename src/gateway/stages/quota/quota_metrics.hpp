// The quota feature's metric families (docs/quotas.md): refusals, what each
// quota entry has left, the traffic breaker, teams' dynamic quotas and the
// shared store. Registered by the feature itself with the gateway's
// registry and held by the QuotaBook (issue 42: a feature owns its metrics).
#pragma once

#include "observability/metrics_registry.hpp"

namespace arbiter {

struct QuotaMetrics {
  explicit QuotaMetrics(metrics::Registry& r) : registry(r) {}
  metrics::Registry& registry;

  metrics::Family<metrics::Counter>& quota_refused = registry.counter(
      "arbiter_quota_refused_total",
      "Requests refused by a quota (docs/quotas.md), by tenant and the limit that refused: "
      "requests_per_minute, tokens_per_minute, tokens_per_day, max_concurrent.",
      {"tenant", "limit"});
  metrics::Family<metrics::Gauge>& quota_remaining = registry.gauge(
      "arbiter_quota_remaining",
      "What a quota entry has left now, by owner (tenant or team), its index in the owner's quotas "
      "list, and limit (requests_per_minute, tokens_per_minute, tokens_per_day).",
      {"owner", "quota", "limit"});
  metrics::Family<metrics::Gauge>& quota_in_flight = registry.gauge(
      "arbiter_quota_in_flight", "Requests holding a reservation in a quota entry (admitted, not ended).",
      {"owner", "quota"});
  metrics::Family<metrics::Gauge>& quota_reserved_tokens = registry.gauge(
      "arbiter_quota_reserved_tokens",
      "Tokens reserved in a quota entry by requests that have not ended (settled with usage at the end).",
      {"owner", "quota"});
  metrics::Family<metrics::Counter>& traffic_transitions = registry.counter(
      "arbiter_traffic_breaker_transitions_total",
      "Traffic breaker stage changes by tenant (green, yellow: over throttle_at x quota, orange: over "
      "degrade_at, degraded; red: over block_at, refused for a back-off).",
      {"tenant", "from", "to"});
  metrics::Family<metrics::Gauge>& traffic_stage = registry.gauge(
      "arbiter_traffic_breaker_stage", "Each tenant's traffic breaker stage: 0 green, 1 yellow, 2 orange, 3 red.",
      {"tenant"});
  metrics::Family<metrics::Gauge>& team_dynamic_quota = registry.gauge(
      "arbiter_team_dynamic_quota",
      "Each team's dynamic quota as last recomputed from its usage (teams[].dynamic_quota), by the limit it sets.",
      {"team", "limit"});
  metrics::Gauge& quota_store_up =
      registry.gauge("arbiter_quota_store_up",
                     "1 while the shared quota store (quota_store.redis) answers; 0 while the local stand-in "
                     "enforces quotas (absent without a store).",
                     {})
          .with({});
  metrics::Counter& quota_store_calls =
      registry.counter("arbiter_quota_store_calls_total",
                       "Calls to the shared quota store: lease refills, hand-backs, probes.", {})
          .with({});
  metrics::Counter& quota_store_failures =
      registry.counter("arbiter_quota_store_failures_total",
                       "Quota store calls that failed or timed out (each takes the store down for a back-off).", {})
          .with({});
};

}  // namespace arbiter
