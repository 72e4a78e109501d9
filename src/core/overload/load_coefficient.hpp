// The load coefficient L of the field report (../shared/BRIEF.md, 3): how
// hard a backend, and a pool, is pressed, in [0, 1], from the engine's own
// figures and the gateway's view of it. Pure: no I/O, clock passed in.
// docs/overload.md defines each term; in short, per backend:
//
//   busy        requests running that the gateway must serve, over the
//               backend's slot limit: max(engine running - this gateway's
//               background requests there, this gateway's other requests
//               there) / slots; or, while work of the pool waits in the
//               gateway, the scheduler's estimate of the engine's prefill
//               queue over its limit, when higher (an engine busy
//               prefilling long prompts runs few sequences but is full).
//               Background work runs on idle capacity and is preempted for
//               others: it is not pressure (and counting it would let a
//               night batch pause itself).
//   kv          the engine's KV-cache use (vllm:kv_cache_usage_perc, ...).
//   queue       work waiting: (engine waiting + this gateway's non-background
//               requests queued for the pool, the backend's part of them) /
//               slots; a full batch of waiting work per backend is 1.
//   cache_miss  1 - the prefix-cache hit rate since the last scrape (vLLM's
//               counters' differences; SGLang's gauge).
//
// Each term is clamped to [0, 1]. A term that cannot be known is left out
// and the weights of the others scale up (never a guess): a stale or down
// engine has no engine terms (busy then counts the gateway's own requests),
// llama.cpp has no cache term, a window with no lookups has none either.
// L = sum(w_i x term_i) / sum(w_i) over the known terms; smoothed per backend
// by an exponential moving average; a pool's L is the slot-weighted mean of
// its backends that are not down.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/engine_metrics.hpp"
#include "core/scheduler_types.hpp"

namespace arbiter::overload {

// Default weights: the report's 0.4 / 0.3 / 0.2 / 0.1.
struct LoadWeights {
  double busy = 0.4;
  double kv = 0.3;
  double queue = 0.2;
  double cache_miss = 0.1;
};

// One backend's terms at one judgement, each in [0, 1]; empty: unknown.
struct LoadTerms {
  std::optional<double> busy;
  std::optional<double> kv;
  std::optional<double> queue;
  std::optional<double> cache_miss;
};

// What the terms are computed from, for one backend.
struct BackendView {
  // The engine's figures are usable (the monitor's verdict is neither
  // stale nor down): only then are its terms read.
  bool fresh = false;
  std::optional<double> engine_running;
  std::optional<double> engine_waiting;
  std::optional<double> kv_usage;
  std::optional<double> cache_hit_rate;  // over the last window, 0..1
  uint32_t slots = 0;                    // the backend's slot limit now (0: treated as 1)
  uint32_t own_running = 0;              // this gateway's non-background requests running there
  uint32_t own_background = 0;           // this gateway's background requests running there
  double queued = 0;                     // the backend's part of the pool's non-background queue
  double prefill_fill = 0;               // its prefill backlog over the limit, 0..1 (Scheduler::prefill_fill)
};

LoadTerms load_terms(const BackendView& view);

// The weighted mean of the known terms; nullopt when none is known or the
// known terms' weights are all 0.
std::optional<double> combine(const LoadTerms& terms, const LoadWeights& weights);

// The prefix-cache hit rate between two readings of vLLM's counters;
// nullopt without a previous reading, after a counter reset (a restarted
// engine) or when no token was looked up in between.
std::optional<double> window_hit_rate(const std::optional<PrefixCacheCounts>& before,
                                      const std::optional<PrefixCacheCounts>& now);

// The prefix-cache hit rate over the last window with lookups, fed each
// scrape's counters: it keeps the last rate while a window has none (a tick
// re-judging the same scrape, an idle engine, a counter reset).
class CacheWindow {
 public:
  std::optional<double> update(const std::optional<PrefixCacheCounts>& now);

 private:
  std::optional<PrefixCacheCounts> counts_;
  std::optional<double> rate_;
};

// An exponential moving average over irregular samples: a sample `dt` after
// the last moves the average by 1 - exp(-dt / tau) of the difference. The
// first sample is taken as is; tau 0 means no smoothing.
class Smoothed {
 public:
  double update(double sample, sched::TimePoint now, sched::Duration tau);
  std::optional<double> value() const { return value_; }
  void reset() { value_.reset(); }

 private:
  std::optional<double> value_;
  sched::TimePoint last_{};
};

// One backend's smoothed L and its weight in its pool's mean.
struct BackendLoad {
  std::optional<double> load;  // empty: nothing known (or down)
  uint32_t slots = 0;
};

// The slot-weighted mean of the backends that have a load; nullopt when
// none has.
std::optional<double> pool_load(std::span<const BackendLoad> backends);

}  // namespace arbiter::overload
