// Staged degradation's state in the gateway (docs/overload.md): each
// backend's load coefficient L and each pool's stage, fed at every judgement
// of the engine-signal monitor (BackendMonitor's on_judged), read by the
// degrade stage on the request path.
//
// Per judgement of a backend: its terms (core/overload/load_coefficient.hpp)
// from the scrape's figures (only while they are fresh) and the scheduler's
// view (its slot limit, this gateway's requests running there, background
// apart, and its part of the pool's non-background queue), smoothed; then
// the pool's L over its backends not down, and the pool's StageController
// steps. With degradation enabled, the classes whose actions pause them
// are paused on the pool from the elevated stage and resumed below it.
//
// Threading: observe() runs on the monitor's strand and carry_from() on a
// reload's thread, both under mu_ (the smoothing and the controllers); it
// takes the dispatcher's lock to read the scheduler; stage(), load() and
// retry_after() read atomics, from any thread, lock-free.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/config.hpp"
#include "core/engine_metrics.hpp"
#include "core/overload/degradation.hpp"
#include "core/overload/load_coefficient.hpp"
#include "core/scheduler_types.hpp"
#include "gateway/dispatch/dispatcher.hpp"
#include "gateway/stages/degrade/degrade_metrics.hpp"

namespace arbiter {

class OverloadControl {
 public:
  // Outlive it. `actions[c]`: class c's resolved actions (degrade_actions).
  OverloadControl(const Config& config, std::vector<overload::ClassActions> actions, SchedulerLink dispatcher,
                  metrics::Registry& registry);

  // A judgement of a backend by the monitor (its strand).
  void observe(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal, const EngineLoad& load,
               sched::TimePoint now);

  // A reload: pool `to` takes over `old`'s pool `from` (the same model,
  // unchanged, under the same degradation settings): each backend's
  // smoothed load, the stage and since when, and with degradation on the
  // classes its stage pauses, paused on this generation's scheduler. So a
  // reload under overload does not step the pool back to normal.
  void carry_from(const OverloadControl& old, uint32_t from, uint32_t to);

  // Any thread.
  overload::Stage stage(std::size_t pool) const {
    return static_cast<overload::Stage>(pools_[pool]->stage.load(std::memory_order_relaxed));
  }
  double load(std::size_t pool) const { return pools_[pool]->load.load(std::memory_order_relaxed); }
  // How long a shed request of the class should wait: the class's queue's
  // predicted drain on the pool at the last judgement, at least 1 s.
  std::chrono::milliseconds retry_after(std::size_t pool, std::size_t cls) const;

  const overload::ClassActions& actions(std::size_t cls) const { return actions_[cls]; }
  DegradeMetrics& metrics() { return metrics_; }

 private:
  struct Backend {
    overload::Smoothed load;
    overload::CacheWindow cache;  // vLLM's counters over fresh scrapes
    metrics::Gauge* gauge = nullptr;
    metrics::Gauge* terms[4] = {};            // busy, kv, queue, cache_miss
  };
  struct Pool {
    overload::StageController controller;
    double since = 0;  // unix time the stage was entered (arbiter_degradation_stage_since)
    std::vector<Backend> backends;
    std::vector<overload::BackendLoad> loads;  // per backend: its smoothed L and slot limit, for the mean
    std::atomic<uint8_t> stage{0};
    std::atomic<double> load{0};
    std::unique_ptr<std::atomic<int64_t>[]> drain_ms;  // per class
    metrics::Gauge* load_gauge = nullptr;
    metrics::Gauge* stage_gauge = nullptr;
    metrics::Gauge* since_gauge = nullptr;
  };
  // The backend's view from the scrape and the scheduler (under the
  // dispatcher's lock, where its pool's class drains are read too).
  overload::BackendView view_of(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal,
                                const EngineLoad& load, sched::TimePoint now);
  void enter(uint32_t pool, overload::Stage from, const overload::LoadTerms& terms);
  // The pool's classes paused or resumed for `stage` (degradation enabled).
  void pause_for(uint32_t pool, overload::Stage stage);

  const Config& config_;
  const std::vector<overload::ClassActions> actions_;
  SchedulerLink dispatcher_;
  DegradeMetrics metrics_;
  mutable std::mutex mu_;  // the pools' smoothing and controllers
  std::vector<std::unique_ptr<Pool>> pools_;
};

// Class c's actions: its `degrade:` settings, else overload::default_actions
// (protected in the top priority tier of the non-background classes).
std::vector<overload::ClassActions> degrade_actions(const Config& config);

}  // namespace arbiter
