// The config sections of backend-failure handling (docs/resilience.md),
// flat for the setting-key tables: outlier_detection, retries,
// health_probes and model_breaker. resilience_settings.hpp turns them into
// the state machines' settings.
#pragma once

#include <chrono>
#include <cstdint>

namespace arbiter::resilience {

using Millis = std::chrono::milliseconds;

// outlier_detection: per-backend ejection (core/resilience/outlier_detector.hpp).
struct OutlierDetectionConfig {
  bool enabled = true;
  uint32_t consecutive_failures = 5;  // 0: rule off
  double failure_rate = 0.1;          // over window_ms, and 2x its healthy peers'; above 1: rule off
  uint32_t min_requests = 10;         // in the window before the rate counts
  Millis window{5'000};
  Millis base_ejection{5'000};        // x ejection count ...
  Millis max_ejection{300'000};       // ... capped here
  double max_ejected_share = 0.5;     // of a pool at once (at least one backend)
  Millis slow_start{10'000};          // capacity ramp after a return; 0: off
  Millis max_retry_after{60'000};     // an engine's Retry-After holds it at most this long
};

// retries: a request that failed before the client saw a byte runs again on
// another backend, and a resumable stream fails over (retry_budget.hpp).
struct RetriesConfig {
  uint32_t max_retries = 2;  // per request; 0: no retries and no failover
  double budget = 0.1;       // retries <= max(min_retries, budget x requests) per pool over window_ms
  uint32_t min_retries = 10;
  Millis window{10'000};
  Millis backoff_base{25};
  Millis backoff_max{250};
};

// health_probes: a 1-token completion per backend (full request path).
struct HealthProbesConfig {
  bool enabled = true;
  Millis interval{300'000};  // periodic probe of every backend
  Millis timeout{5'000};     // a probe not answered by then failed
};

// model_breaker: per model, over the model's requests as clients see them
// (model_breaker.hpp); models name their degraded variant and fallback.
struct ModelBreakerSectionConfig {
  bool enabled = true;
  Millis window{30'000};
  uint32_t min_requests = 20;
  double degrade_at = 0.05, fallback_at = 0.10, isolate_at = 0.20;
  Millis base_open{5'000};
  Millis max_open{300'000};
  uint32_t probe_requests = 3;  // half-open trials to the model itself
};

}  // namespace arbiter::resilience
