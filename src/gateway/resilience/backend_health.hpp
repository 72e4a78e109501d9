// Per-backend health as the scheduler sees it: the engine-signal monitor's
// verdict combined with outlier detection (core/resilience/
// outlier_detector.hpp), and each pool's retry budget. A backend ejected for
// failing is reported down to the scheduler, unless every backend of its
// pool is ejected or down (panic mode: the ejected ones serve, as Envoy
// does, rather than nothing); a backend back from an ejection ramps up its
// slots (slow start, BackendSignal::max_in_flight). Active health probes
// (health_probe.hpp) decide an ejected backend's return and check every
// backend periodically.
//
// Threading: record(), on_signal() and the retry calls come from any thread
// (one mutex); the dispatcher is told outside it. A loop on its own strand
// applies what falls due with time (an ejection's end, slow-start steps,
// periodic probes) and runs the probes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/config.hpp"
#include "core/resilience/outlier_detector.hpp"
#include "core/resilience/retry_budget.hpp"
#include "core/scheduler_types.hpp"
#include "gateway/dispatch/dispatcher.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/resilience/run_verdict.hpp"
#include "http/asio.hpp"

namespace arbiter {

class BackendHealth {
 public:
  // `config` outlives it; models[p] is scheduler pool p.
  BackendHealth(const Config& config, SchedulerLink dispatcher, net::any_io_executor executor,
                GatewayMetrics& metrics);
  ~BackendHealth();
  BackendHealth(const BackendHealth&) = delete;
  BackendHealth& operator=(const BackendHealth&) = delete;

  void start();
  void stop();  // idempotent; the loop ends when the io_context next runs it
  // Before start(), at a config reload: what the scheduler already has for
  // a backend (carried from the config before, or held down until its
  // first scrape), as if the monitor had said it and the scheduler been
  // told: the next verdict that differs reaches the scheduler. A backend
  // assumed down stays down until a scrape of its engine succeeds (a
  // verdict that is not stale): it takes work only once probed.
  void assume(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal);
  // Before start(), at a config reload: pool `to` goes on with `old`'s pool
  // `from`'s outlier detection (ejections, failure windows) and retry
  // budget. Same backends in the same order, same settings: the caller's
  // word (an unchanged model under unchanged outlier_detection and retries).
  void carry_from(const BackendHealth& old, uint32_t from, uint32_t to);

  // The model breakers' part (before start()): while `breaker_open(pool)`
  // says the pool's model waits out an opening, its backends are probed
  // every kOpenProbeEvery; any probe of a pool's backend that succeeds
  // calls `probe_ok(pool)`, which ends the model's opening (into its
  // half-open trials) instead of waiting out the back-off.
  void set_breaker_hooks(std::function<bool(uint32_t pool)> breaker_open, std::function<void(uint32_t pool)> probe_ok);

  // The engine-signal monitor's verdict for a backend (BackendMonitor's callback).
  void on_signal(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal);
  // Adaptive capacity's limits for a backend (gateway/backend_capacity.hpp):
  // `base` slots for every class (0: max_concurrency), `extra` above them
  // for background work, `engine_share` this gateway's share of the engine
  // (BackendSignal::engine_share). A slow start after an ejection caps both
  // slot counts.
  void set_capacity(uint32_t pool, uint32_t backend, uint32_t base, uint32_t extra, double engine_share);
  // How a run on a backend ended; `retry_after`: the engine's, on a 429/503.
  void record(uint32_t pool, uint32_t backend, RunVerdict verdict,
              std::optional<std::chrono::milliseconds> retry_after);

  // Retry budget of a pool: a client request arrived; may one retry go?
  void on_request(uint32_t pool);
  bool try_retry(uint32_t pool);
  uint32_t max_retries() const { return config_.retries.max_retries; }
  // Jittered back-off before retry `attempt` (1-based) in a pool.
  std::chrono::milliseconds backoff(uint32_t pool, uint32_t attempt);

  // Gauges for a metrics scrape.
  void export_state();

 private:
  using Clock = sched::Clock;
  struct PoolHealth {
    PoolHealth(resilience::OutlierDetector d, resilience::RetryBudget b, std::size_t backends)
        : detector(std::move(d)),
          budget(std::move(b)),
          monitor(backends),
          capacity(backends),
          published(backends),
          held(backends) {}
    resilience::OutlierDetector detector;
    resilience::RetryBudget budget;
    std::vector<sched::BackendSignal> monitor;    // the monitor's last verdict per backend
    struct Capacity {
      uint32_t base = 0;  // 0: none (max_concurrency)
      uint32_t extra = 0;
      double engine_share = 1;
    };
    std::vector<Capacity> capacity;  // adaptive capacity's
    std::vector<sched::BackendSignal> published;  // what the scheduler was last told
    std::vector<bool> held;  // assumed down: down until a scrape succeeds
    bool panic = false;
  };
  struct Update {
    uint32_t pool, backend;
    sched::BackendSignal signal;
  };
  struct Probe {
    uint32_t pool, backend;
    bool on_return;  // decides an ejected backend's return
  };
  // Probes of the backends of models whose breaker is open, not already
  // being probed for it. Strand.
  void add_breaker_probes(Clock::time_point now, std::vector<Probe>& probes);

  // Applies what fell due by `now` in pool `p`, notes transitions, and
  // collects the signals that changed. Lock held.
  void settle_locked(uint32_t p, Clock::time_point now, std::vector<Update>& out);
  void tell(const std::vector<Update>& updates);  // outside the lock
  Task<void> loop();
  Task<void> run_probe(Probe probe);

  const Config& config_;
  SchedulerLink dispatcher_;
  net::strand<net::any_io_executor> strand_;
  GatewayMetrics& metrics_;
  mutable std::mutex mu_;
  std::vector<PoolHealth> pools_;  // guarded by mu_
  uint64_t random_;                // guarded: back-off jitter (xorshift)
  net::steady_timer timer_;        // strand
  std::atomic<bool> stopped_{false};
  Clock::time_point next_periodic_{};  // strand: the next round of periodic probes
  std::function<bool(uint32_t)> breaker_open_;  // set before start()
  std::function<void(uint32_t)> probe_ok_;
  Clock::time_point next_breaker_probes_{};       // strand
  std::vector<std::vector<bool>> breaker_probing_;  // strand: [pool][backend] a breaker's probe in flight
};

}  // namespace arbiter
