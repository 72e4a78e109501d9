// Staged degradation's metric families (docs/overload.md), registered by the
// feature with the gateway's registry.
#pragma once

#include "observability/metrics_registry.hpp"

namespace arbiter {

struct DegradeMetrics {
  explicit DegradeMetrics(metrics::Registry& registry)
      : pool_load(registry.gauge("arbiter_pool_load",
                                 "The pool's load coefficient L (0..1): the slot-weighted mean of its backends' "
                                 "smoothed L; 0 until a backend has a reading.",
                                 {"pool"})),
        backend_load(registry.gauge("arbiter_backend_load",
                                    "A backend's smoothed load coefficient L (0..1): busy, KV, queue and prefix-cache "
                                    "miss terms, weighted (docs/overload.md).",
                                    {"pool", "backend"})),
        load_term(registry.gauge("arbiter_backend_load_term",
                                 "One term of a backend's L at its last judgement (0..1); a term not known then "
                                 "(a stale engine's, one the engine does not report) keeps its last value.",
                                 {"pool", "backend", "term"})),
        stage(registry.gauge("arbiter_degradation_stage",
                             "The pool's degradation stage: 0 normal, 1 elevated, 2 high, 3 shedding (computed "
                             "also while degradation.enabled is false: the stage it would take).",
                             {"pool"})),
        stage_since(registry.gauge("arbiter_degradation_stage_since_seconds",
                                   "Unix time the pool entered its current degradation stage (the start for the first).", {"pool"})),
        transitions(registry.counter("arbiter_degradation_transitions_total",
                                     "Degradation stage changes by pool and the stage entered.", {"pool", "to"})),
        degraded(registry.counter("arbiter_degraded_requests_total",
                                  "Requests changed by staged degradation, by pool, class and action (cap, variant, "
                                  "shed).",
                                  {"pool", "class", "action"})) {}

  metrics::Family<metrics::Gauge>& pool_load;
  metrics::Family<metrics::Gauge>& backend_load;
  metrics::Family<metrics::Gauge>& load_term;
  metrics::Family<metrics::Gauge>& stage;
  metrics::Family<metrics::Gauge>& stage_since;
  metrics::Family<metrics::Counter>& transitions;
  metrics::Family<metrics::Counter>& degraded;
};

}  // namespace arbiter
