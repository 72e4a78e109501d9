// The config sections (resilience_config.hpp) as the state machines'
// settings, where the rest of the config adds to them.
#pragma once

#include "core/resilience/model_breaker.hpp"
#include "core/resilience/outlier_detector.hpp"
#include "core/resilience/resilience_config.hpp"
#include "core/resilience/retry_budget.hpp"

namespace arbiter::resilience {

inline OutlierConfig outlier_settings(const OutlierDetectionConfig& c, bool probes) {
  OutlierConfig out = c;
  out.probe_on_return = probes;
  return out;
}

inline ModelBreakerConfig breaker_settings(const ModelBreakerSectionConfig& c, bool has_degraded,
                                           bool has_fallback) {
  ModelBreakerConfig out;
  static_cast<ModelBreakerTunables&>(out) = c;
  out.has_degraded = has_degraded;
  out.has_fallback = has_fallback;
  return out;
}

}  // namespace arbiter::resilience
