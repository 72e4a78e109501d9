// The config sections of backend-failure handling (docs/resilience.md),
// flat for the setting-key tables: outlier_detection, retries,
// health_probes and model_breaker. Where a section holds what its state
// machine takes, it is the machine's own struct (retries) or its base
// (model_breaker); resilience_settings.hpp adds what the rest of the config
// says.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/resilience/model_breaker.hpp"
#include "core/resilience/retry_budget.hpp"

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
// another backend, and a resumable stream fails over: the section is the
// budget's own RetryConfig (retry_budget.hpp).

// health_probes: a 1-token completion per backend (full request path).
struct HealthProbesConfig {
  bool enabled = true;
  Millis interval{300'000};  // periodic probe of every backend
  Millis timeout{5'000};     // a probe not answered by then failed
};

// model_breaker: per model, over the model's requests as clients see them
// (model_breaker.hpp: the tunables); models name their degraded variant and
// fallback.
struct ModelBreakerSectionConfig : ModelBreakerTunables {
  bool enabled = true;
};

}  // namespace arbiter::resilience
