// The model breaker's metric families (docs/resilience.md), registered by
// the feature itself with the gateway's registry: the breaker's folder owns
// its metrics as it owns its stage and observer (issue 42).
#pragma once

#include "observability/metrics_registry.hpp"

namespace arbiter {

struct BreakerMetrics {
  explicit BreakerMetrics(metrics::Registry& registry)
      : stage(registry.gauge("arbiter_model_breaker_stage",
                             "1 for the model breaker's stage (closed, degraded, fallback, isolated), 0 for the others.",
                             {"model", "stage"})),
        transitions(registry.counter("arbiter_model_breaker_transitions_total",
                                     "Model breaker stage changes, by model, from and to.", {"model", "from", "to"})),
        rerouted(registry.counter("arbiter_model_rerouted_total",
                                  "Requests the model breaker sent to another model (degraded variant or fallback) "
                                  "or refused (isolated).",
                                  {"model", "target"})) {}

  metrics::Family<metrics::Gauge>& stage;
  metrics::Family<metrics::Counter>& transitions;
  metrics::Family<metrics::Counter>& rerouted;
};

}  // namespace arbiter
