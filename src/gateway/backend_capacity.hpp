// Adaptive capacity in the gateway (issue 11): one CapacityController
// (core/adaptive_capacity.hpp) per backend, fed at every engine-signals
// judgement (BackendMonitor's on_judged) with the scrape's waiting count and
// KV use, the inter-event gaps the relays counted for the backend since the
// last one (StreamGaps, in its ModelPool) against the pool's gap target (the
// tightest tpot_slo of the classes with work there, else itl_target), and
// the scheduler's occupancy of the backend. What it decides goes to the
// scheduler through BackendHealth (base slots for every class, extra slots
// for background work), which also caps it while a backend ramps up after
// an ejection. A model may have settings of its own (Config's
// adaptive_capacity_of); a pool with it off has no controllers.
//
// A backend whose metrics are stale or down starts over at its
// max_concurrency (the engine cannot be seen: no slots beyond what the
// operator configured), and its gaps meanwhile are dropped.
//
// Threading: observe() runs on the monitor's strand and carry_from() on a
// reload's thread, both under mu_ (the controllers); observe takes the
// dispatcher's lock to read the scheduler and BackendHealth's to publish,
// one after the other, never both.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/adaptive_capacity.hpp"
#include "core/config.hpp"
#include "core/engine_metrics.hpp"
#include "core/scheduler_types.hpp"
#include "gateway/dispatch/dispatcher.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/resilience/backend_health.hpp"

namespace arbiter {

class BackendCapacity {
 public:
  using Clock = sched::Clock;

  // All outlive it; models[p] is scheduler pool p and pools[p]; only built
  // when config.any_adaptive_capacity(), and only the pools whose settings
  // (config.adaptive_capacity_of) enable it get controllers.
  BackendCapacity(const Config& config, SchedulerLink dispatcher,
                  const std::vector<std::unique_ptr<ModelPool>>& pools, BackendHealth& health,
                  GatewayMetrics& metrics, Clock::time_point now);

  // A judgement of a backend by the monitor (its strand): `load` the
  // figures of its last successful scrape.
  void observe(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal, const EngineLoad& load,
               Clock::time_point now);
  // A reload: pool `to` takes over `old`'s pool `from` (the same model,
  // unchanged, under the same adaptive_capacity settings): each backend's
  // controller, its limit published to this generation's BackendHealth at
  // once. So a reload does not send a tuned backend back to max_concurrency.
  void carry_from(const BackendCapacity& old, uint32_t from, uint32_t to);

 private:
  struct Backend {
    sched::CapacityController controller;
    metrics::Gauge* limit_gauge;
    metrics::Gauge* extra_gauge;
    metrics::Gauge* gap_target_gauge;
    metrics::Counter* ups;
    metrics::Counter* downs;
  };
  // Sets the gauges, counts the change and tells BackendHealth.
  void publish(uint32_t pool, uint32_t backend, uint32_t before);

  const Config& config_;
  SchedulerLink dispatcher_;
  const std::vector<std::unique_ptr<ModelPool>>& pools_;
  BackendHealth& health_;
  mutable std::mutex mu_;  // backends_' controllers
  std::vector<std::vector<Backend>> backends_;  // [pool][backend], empty for a fixed pool
  std::vector<std::vector<bool>> gap_classes_;  // [pool]: the classes its gap target counts (pool_gap_target)
};

}  // namespace arbiter
