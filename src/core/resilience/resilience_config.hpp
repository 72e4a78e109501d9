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
#include "core/resilience/outlier_detector.hpp"
#include "core/resilience/retry_budget.hpp"

namespace arbiter::resilience {

using Millis = std::chrono::milliseconds;

// outlier_detection: per-backend ejection: the detector's own settings
// (core/resilience/outlier_detector.hpp; probe_on_return comes from
// health_probes), whether it runs, and how long an engine's Retry-After may
// hold a backend.
struct OutlierDetectionConfig : OutlierConfig {
  // The rate's window an operator starts from: shorter than the detector's
  // own default, so a failing engine is ejected within seconds.
  OutlierDetectionConfig() { window = std::chrono::seconds(5); }
  bool enabled = true;
  Millis max_retry_after{60'000};  // an engine's Retry-After holds it at most this long
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
