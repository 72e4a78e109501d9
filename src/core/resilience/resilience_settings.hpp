// The config sections (resilience_config.hpp) as the state machines'
// settings.
#pragma once

#include "core/resilience/model_breaker.hpp"
#include "core/resilience/outlier_detector.hpp"
#include "core/resilience/resilience_config.hpp"
#include "core/resilience/retry_budget.hpp"

namespace arbiter::resilience {

inline OutlierConfig outlier_settings(const OutlierDetectionConfig& c, bool probes) {
  return OutlierConfig{.consecutive_failures = c.consecutive_failures,
                       .failure_rate = c.failure_rate,
                       .min_requests = c.min_requests,
                       .window = c.window,
                       .base_ejection = c.base_ejection,
                       .max_ejection = c.max_ejection,
                       .max_ejected_share = c.max_ejected_share,
                       .slow_start = c.slow_start,
                       .probe_on_return = probes};
}

inline RetryConfig retry_settings(const RetriesConfig& c) {
  return RetryConfig{.max_retries = c.max_retries,
                     .budget = c.budget,
                     .min_retries = c.min_retries,
                     .window = c.window,
                     .backoff_base = c.backoff_base,
                     .backoff_max = c.backoff_max};
}

inline ModelBreakerConfig breaker_settings(const ModelBreakerSectionConfig& c, bool has_degraded,
                                           bool has_fallback) {
  return ModelBreakerConfig{.window = c.window,
                            .min_requests = c.min_requests,
                            .degrade_at = c.degrade_at,
                            .fallback_at = c.fallback_at,
                            .isolate_at = c.isolate_at,
                            .base_open = c.base_open,
                            .max_open = c.max_open,
                            .probe_requests = c.probe_requests,
                            .has_degraded = has_degraded,
                            .has_fallback = has_fallback};
}

}  // namespace arbiter::resilience
