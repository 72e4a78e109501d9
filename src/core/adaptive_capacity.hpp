// Adaptive capacity: how many requests one backend is given at once, learned
// from what its engine shows instead of a fixed max_concurrency. Pure: no
// I/O, the clock is a parameter. One CapacityController per backend; the
// caller (the gateway's monitor, arbiter-bench's virtual run) feeds it the
// engine's figures and token gaps and hands the scheduler base() as the
// backend's slot limit (BackendSignal::max_in_flight) and extra() as slots
// above it that only background classes may take (extra_slots): every
// sequence added slows each step for everyone on the engine, so the extra
// slots go to work that has no latency target, and the other classes keep
// the start's headroom (docs/benchmarks.md measured growth for everyone:
// critical P99 TTFT +16-52%).
//
// Once per `interval` it decides from what it saw since the last decision:
//   shrink  (x backoff, down to min_limit) when the engine's KV cache is
//           fuller than kv_shrink_above;
//   halve   the slots above the start (or x backoff, whichever is
//           smaller) when other (interactive) work ran or waited meanwhile
//           and, while the backend used more slots than the smaller limit
//           would leave, fewer than itl_quantile of the inter-token gaps
//           were within the gap target (decode steps too slow for it: the
//           batch is too large; a limit nobody reaches is not what makes
//           them slow). Never below the start: below the configured
//           max_concurrency slow gaps are prefill steps more often than
//           large batches, and fewer slots do not make prefill faster
//           (docs/benchmarks.md measured it: 83 losing sweep scenarios
//           against 73);
//   grow    (+ growth x limit, at least 1, up to the ceiling: max_limit,
//           and max_extra_share of the start above it) when the limit
//           was what held background work back (the backend full with
//           background work queued for it), the engine queued nothing
//           itself and its KV use is below kv_grow_below, and, when other
//           work ran or waited meanwhile, none of it waited for a slot (it
//           cannot use the extra ones, and the growth would slow it) and at
//           least itl_quantile of the gaps were within the gap target
//           (gap_target()). Background work alone has no per-token target:
//           without other work the gaps neither stop growth nor shrink the
//           limit (a batch-only pool grows to what its engines hold;
//           docs/benchmarks.md, "Background work alone");
//   hold    otherwise (no demand, no gap evidence yet, or between the KV
//           thresholds: the hysteresis keeps noise from moving it).
// The gap rule judges a low quantile, not the mean: with chunked prefill a
// step that carries a prefill chunk takes several times a decode-only step,
// and how many steps carry one depends on the prompts arriving, not on the
// batch size that more slots would change. The median gap is a decode-only
// step as long as most steps are decode-only.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>

namespace arbiter::sched {

struct AdaptiveCapacityConfig {
  bool enabled = false;
  uint32_t min_limit = 8;    // floor: never fewer slots than this
  uint32_t max_limit = 256;  // ceiling: never more (the start is the backend's max_concurrency)
  // Slots above the start at most this share of it (background work's
  // extra slots): each one slows every step for the other classes too.
  double max_extra_share = 0.25;
  std::chrono::milliseconds interval{200};    // between two decisions
  std::chrono::milliseconds itl_target{30};   // a decode step's time we accept when no class declares one
  double itl_quantile = 0.5;  // share of gaps that must be within itl_target
  uint32_t min_gaps = 32;     // fewer gaps in an interval: no gap verdict (hold)
  double kv_grow_below = 0.8;    // grow only with KV use below this
  double kv_shrink_above = 0.9;  // shrink with KV use above this
  double growth = 0.125;  // part of the limit added per interval when growing
  double backoff = 0.9;   // factor applied per interval when shrinking
};

// Why a config cannot be used, or nullptr when it can.
const char* validate(const AdaptiveCapacityConfig& config);

// The gap a backend's decode steps must stay within: the tightest per-token
// bound (TPOT SLO) among the classes with work on it that declare one
// (`bounds`, zero for a class that declares none); the config's itl_target
// when none does.
std::chrono::duration<double> gap_target(const AdaptiveCapacityConfig& config,
                                         std::span<const std::chrono::duration<double>> bounds);

// What the controller sees of one backend's slots at a scrape or tick.
struct Occupancy {
  uint32_t in_flight = 0;           // its slots in use
  bool background_waiting = false;  // background work queued in the gateway could run on it
  bool others_waiting = false;      // other (non-background) work queued for its pool
  bool others_running = false;      // other work running on its pool
};

class CapacityController {
 public:
  using Clock = std::chrono::steady_clock;

  // The limit starts at `start` (the backend's max_concurrency) within
  // [min_limit, max_limit].
  CapacityController(const AdaptiveCapacityConfig& config, uint32_t start, Clock::time_point now);

  // The engine's latest figures (a scrape): requests it queues itself, KV use 0..1.
  void engine(double waiting, double kv_usage);
  // Inter-token gaps seen on this backend since the last call: how many,
  // and how many of them were within the gap target.
  void gaps(uint64_t total, uint64_t within_target);
  // The backend's slots at a scrape or tick: the limit holds background
  // work back when it has no free slot while such work waits.
  void occupancy(const Occupancy& seen);

  // Decides when an interval has passed since the last decision; returns
  // whether the limit changed.
  bool update(Clock::time_point now);

  uint32_t limit() const { return limit_; }
  uint32_t base() const { return std::min(limit_, start_); }  // for every class
  uint32_t extra() const { return limit_ - base(); }          // above the start: background only

 private:
  enum class Verdict { kShrink, kHalveExtra, kHold, kGrow };
  Verdict judge() const;

  AdaptiveCapacityConfig config_;
  uint32_t start_;
  uint32_t ceiling_;  // max_limit, and start x (1 + max_extra_share)
  uint32_t limit_;
  Clock::time_point last_decision_;
  // Seen since the last decision.
  uint64_t gaps_ = 0;
  uint64_t gaps_within_ = 0;
  bool limited_ = false;  // full with background work waiting, at some call
  bool in_use_ = false;   // more slots in use than a shrink would leave, at some call
  bool others_waiting_ = false;  // other work waited for a slot, at some call
  bool others_active_ = false;   // other work ran or waited, at some call
  // The latest scrape's figures (kept across decisions until the next one).
  double waiting_ = 0;
  double kv_ = 0;
};

}  // namespace arbiter::sched
