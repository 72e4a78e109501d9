// What a tenant's or a team's quota says (config: tenants[].quotas,
// teams[].quotas; docs/quotas.md). Each entry is one set of limits over the
// requests it covers: all of the owner's, or only those of some classes or
// models. A request is charged to every entry that covers it, its tenant's
// and its team's alike, and admitted only when all of them have room.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/quota/gcra.hpp"

namespace arbiter::quota {

struct QuotaLimits {
  std::optional<double> requests_per_minute;
  std::optional<double> tokens_per_minute;  // reserved at admission, reconciled with usage
  std::optional<double> tokens_per_day;
  std::optional<uint32_t> max_concurrent;   // requests admitted and not yet ended
  std::vector<std::string> classes;         // empty: every class
  std::vector<std::string> models;          // empty: every model

  bool covers(std::string_view klass, std::string_view model) const;
  bool limits_anything() const {
    return requests_per_minute || tokens_per_minute || tokens_per_day || max_concurrent;
  }
};

// What a tenant's quotas do while the shared store (Redis) is unreachable.
enum class StoreDownPolicy : uint8_t {
  kLocal,   // each replica enforces its share: the limit / quota_store.replicas
  kOpen,    // no quota (admit; the tokens are reported once the store is back)
  kClosed,  // refuse (503 with Retry-After)
};

// quota_store: where quotas are kept. Without `redis`, in this process
// (exact for one gateway); with it, shared by every replica through leases
// (docs/quotas.md).
struct QuotaStoreConfig {
  std::string redis;                                  // "host:port"; empty: in-process
  std::chrono::milliseconds timeout{100};             // every Redis call
  uint32_t replicas = 1;                              // gateways sharing it: the local fallback's divisor
  double lease_share = 0.02;                          // a lease block, as a share of the limit
  std::chrono::milliseconds lease_idle{2000};         // an unused lease goes back after this
  std::string key_prefix = "arbiter";                 // Redis keys: PREFIX:q:OWNER:INDEX:LIMIT
};

// The traffic breaker's own settings (core/quota/traffic_breaker.hpp).
struct TrafficBreakerSettings {
  // Demand / quota above which each stage starts.
  double throttle_at = 1.5, degrade_at = 2.0, block_at = 3.0;
  // Demand is measured over this sliding window; a probe lasts as long.
  Duration window = std::chrono::seconds(10);
  // At or below a stage's threshold this long to step down from it.
  Duration hold = std::chrono::seconds(5);
  Duration base_backoff = std::chrono::seconds(5), max_backoff = std::chrono::seconds(300);
  uint32_t probe_every = 10;  // half-open: 1 request in this many goes through
  bool operator==(const TrafficBreakerSettings&) const = default;
};

// traffic_breaker: each tenant's demand (admitted or not) against its
// quota rate: the breaker's settings, whether it runs, and what orange does.
struct TrafficBreakerConfig : TrafficBreakerSettings {
  // The quotas' own period: a minute's burst within quota is not over it.
  TrafficBreakerConfig() { window = std::chrono::seconds(60); }
  bool enabled = true;
  int64_t degrade_max_tokens = 256;  // orange: max_tokens capped to this
  std::string degrade_class;         // orange: requests moved to this class; empty: they keep theirs
};

// teams[].dynamic_quota: a limit recomputed from the team's usage
// (core/quota/dynamic_quota.hpp): members x per_member x complexity x
// (1 + min(0.5 x std / mean of its last 24 hours' usage, 0.3)).
struct DynamicQuotaConfig {
  double members = 1;
  double per_member = 50;
  double complexity = 1;
  bool tokens = false;  // the limit it sets: tokens_per_minute, else requests_per_minute
  std::chrono::seconds every{300};  // how often it is recomputed
};

struct TeamConfig {
  std::string name;
  std::vector<QuotaLimits> quotas;  // shared by every tenant of the team
  std::optional<DynamicQuotaConfig> dynamic_quota;  // one more entry, after `quotas`
};

}  // namespace arbiter::quota
