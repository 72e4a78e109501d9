// Adaptive capacity: how many requests one backend is given at once, learned
// from what its engine shows instead of a fixed max_concurrency. Pure: no
// I/O, the clock is a parameter. One CapacityController per backend; the
// caller (the gateway's monitor, arbiter-bench's virtual run) feeds it the
// engine's figures and token gaps and hands limit() to the scheduler as the
// backend's slot limit (BackendSignal::max_in_flight).
//
// Once per `interval` it decides from what it saw since the last decision:
//   shrink  (x backoff) when the engine's KV cache is fuller than
//           kv_shrink_above (down to min_limit), or, while the backend used
//           more slots than the smaller limit would leave, fewer than
//           itl_quantile of the inter-token gaps were within itl_target
//           (decode steps too slow: the batch is too large; a limit nobody
//           reaches is not what makes them slow), down to the start only:
//           below the configured max_concurrency slow gaps are prefill
//           steps more often than large batches, and fewer slots do not
//           make prefill faster (docs/benchmarks.md measured it: 83 losing
//           sweep scenarios against 73);
//   grow    (+ growth x limit, at least 1, up to the ceiling) when the limit
//           was what held work back (the backend full with work queued for
//           it), the engine queued nothing itself, its KV use is below
//           kv_grow_below and at least itl_quantile of the gaps were within
//           itl_target;
//   hold    otherwise (no demand, no gap evidence yet, or between the KV
//           thresholds: the hysteresis keeps noise from moving it).
// The gap rule judges a low quantile, not the mean: with chunked prefill a
// step that carries a prefill chunk takes several times a decode-only step,
// and how many steps carry one depends on the prompts arriving, not on the
// batch size that more slots would change. The median gap is a decode-only
// step as long as most steps are decode-only.
#pragma once

#include <chrono>
#include <cstdint>

namespace arbiter::sched {

struct AdaptiveCapacityConfig {
  bool enabled = false;
  uint32_t min_limit = 8;    // floor: never fewer slots than this
  uint32_t max_limit = 256;  // ceiling: never more (the start is the backend's max_concurrency)
  std::chrono::milliseconds interval{200};    // between two decisions
  std::chrono::milliseconds itl_target{30};   // a decode step's time we accept
  double itl_quantile = 0.5;  // share of gaps that must be within itl_target
  uint32_t min_gaps = 32;     // fewer gaps in an interval: no gap verdict (hold)
  double kv_grow_below = 0.8;    // grow only with KV use below this
  double kv_shrink_above = 0.9;  // shrink with KV use above this
  double growth = 0.125;  // part of the limit added per interval when growing
  double backoff = 0.9;   // factor applied per interval when shrinking
};

// Why a config cannot be used, or nullptr when it can.
const char* validate(const AdaptiveCapacityConfig& config);

class CapacityController {
 public:
  using Clock = std::chrono::steady_clock;

  // The limit starts at `start` (the backend's max_concurrency) within
  // [min_limit, max_limit].
  CapacityController(const AdaptiveCapacityConfig& config, uint32_t start, Clock::time_point now);

  // The engine's latest figures (a scrape): requests it queues itself, KV use 0..1.
  void engine(double waiting, double kv_usage);
  // Inter-token gaps seen on this backend since the last call: how many,
  // and how many of them were within itl_target.
  void gaps(uint64_t total, uint64_t within_target);
  // The backend's slots in use now, and whether requests queued in the
  // gateway could run on it: the limit holds work back when it has no free
  // slot while work waits. Called at each scrape or tick.
  void occupancy(uint32_t in_flight, bool work_waiting);

  // Decides when an interval has passed since the last decision; returns
  // whether the limit changed.
  bool update(Clock::time_point now);

  uint32_t limit() const { return limit_; }

 private:
  enum class Verdict { kShrink, kHold, kGrow };
  Verdict judge() const;

  AdaptiveCapacityConfig config_;
  uint32_t start_;
  uint32_t limit_;
  Clock::time_point last_decision_;
  // Seen since the last decision.
  uint64_t gaps_ = 0;
  uint64_t gaps_within_ = 0;
  bool limited_ = false;  // full with work waiting, at some call
  bool in_use_ = false;   // more slots in use than a shrink would leave, at some call
  // The latest scrape's figures (kept across decisions until the next one).
  double waiting_ = 0;
  double kv_ = 0;
};

}  // namespace arbiter::sched
