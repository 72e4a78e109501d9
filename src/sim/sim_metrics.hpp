// One simulated engine's Prometheus metrics under vLLM's names and meanings
// (labels model_name, engine="0": each port is its own vLLM server), plus
// the simulator's own: aborted requests, wasted tokens, busy time, faults.
// Gauges and counters are sampled from engine::EngineStats at scrape time;
// the latency histograms are observed when a request finishes.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "engine/engine.hpp"
#include "observability/metrics_registry.hpp"

namespace arbiter::sim {

// Faults counted in arbiter_sim_faults_injected_total{kind}.
enum class InjectedFault : std::uint8_t { kError, kHang, kCrash, kSlowStart };

class SimMetrics {
 public:
  SimMetrics(std::string model, const engine::EngineConfig& config);

  // A request finished (any thread): vLLM's latency histograms and
  // request_success_total by finish reason.
  void observe_finished(const engine::RequestTiming& timing, bool finish_length);
  void count_fault(InjectedFault kind);
  // An inference request arrived (before any fault or validation): with
  // the gateway's own request count, how many upstream attempts each
  // client request cost (retries).
  void count_request();

  // The whole exposition, with `stats` and `in_flight_work_tokens`
  // (Engine::in_flight_work_tokens()) sampled by the caller on the engine's strand.
  std::string render(const engine::EngineStats& stats, std::uint64_t in_flight_work_tokens);

 private:
  void sample(const engine::EngineStats& stats, std::uint64_t in_flight_work_tokens);

  std::string model_;   // model_name label value
  std::string labels_;  // model_name="...",engine="0" for the lines rendered by hand
  std::mutex render_mu_;  // scrapes turn sampled totals into counter increments one at a time
  metrics::Registry registry_;
  // Children of the registry's families (never removed, so the pointers stay valid).
  metrics::Gauge* running_;
  metrics::Gauge* waiting_;
  metrics::Gauge* kv_usage_;
  metrics::Gauge* kv_blocks_usable_;
  metrics::Gauge* in_flight_work_;
  metrics::Counter* requests_received_;
  metrics::Counter* prefix_queries_;
  metrics::Counter* prefix_hits_;
  metrics::Counter* preemptions_;
  metrics::Counter* prompt_tokens_;
  metrics::Counter* generation_tokens_;
  metrics::Counter* success_stop_;
  metrics::Counter* success_length_;
  metrics::Counter* aborted_;
  metrics::Counter* wasted_prefill_;
  metrics::Counter* wasted_decode_;
  metrics::Counter* reused_;
  metrics::Counter* prefill_computed_;
  metrics::Counter* steps_;
  metrics::Counter* faults_[4];  // by InjectedFault
  metrics::Histogram* ttft_;
  metrics::Histogram* e2e_;
  metrics::Histogram* queue_;
};

}  // namespace arbiter::sim
