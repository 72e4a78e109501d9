// Adaptive capacity: how many requests one backend is given at once, learned
// from what its engine shows instead of a fixed max_concurrency. Pure: no
// I/O, the clock is a parameter. One CapacityController per backend (per
// gateway replica); the caller (the gateway's monitor, arbiter-bench's
// virtual run) feeds it the engine's figures and token gaps and hands the
// scheduler base() as the backend's slot limit for every class
// (BackendSignal::max_in_flight) and extra() as slots above it that only
// background classes may take (extra_slots).
//
// The start is the backend's max_concurrency; the ceiling is `max_limit`
// (by default 256: vLLM's default max_num_seqs, the most sequences the
// engine runs at once; no engine reports its own). Issue 41: a fixed 64
// slots bound before the engines did, and a healthy fleet served less
// through the gateway than without it.
//
// Two limits for every class: the engine's budget (budget(): what all the
// gateways in front of the engine may have on it together, as this one
// learns it) and this gateway's part of it (base()). Alone in front of the
// engine, the part is the whole budget. Once per `interval` it decides from
// what it saw since the last decision:
//   shrink  (x backoff, down to min_limit) the limit when the engine's KV
//           cache is fuller than kv_shrink_above (the extra slots go first:
//           the budget and the part follow it down);
//   settle  when the engine queues requests itself (waiting > 0: it is past
//           what it runs at once): nothing grows, and the budget shrinks
//           toward what the engine runs (at most x backoff an interval);
//           never below the start here: an engine also queues prompts for
//           want of a step's token budget, which fewer slots do not cure;
//   halve   the slots above the start (or x backoff, whichever is smaller),
//           budget and limit alike, when other (non-background) work ran or
//           waited meanwhile and, while the backend used more slots than
//           the smaller limit would leave, fewer than itl_quantile of the
//           inter-token gaps were within the gap target (decode steps too
//           slow for it: the batch is too large; a limit nobody reaches is
//           not what makes them slow), a first token came later than its
//           class's headroom, or a client left a request running there
//           (GapCounts::abandoned: a per-token SLO can allow an answer
//           longer than its client waits; more sequences make every answer
//           longer still). Never below the start: below the
//           configured max_concurrency slow gaps are prefill steps more
//           often than large batches, and fewer slots do not make prefill
//           faster (docs/benchmarks.md measured it: 83 losing sweep
//           scenarios against 73);
//   grow    the budget (+ growth x budget, at least 1, up to max_limit) when
//           it held other work back (this gateway's part full with other
//           work queued for it, and the engine holding the whole budget),
//           the engine queued nothing itself, its KV use is below
//           kv_grow_below, at least itl_quantile of the gaps were within
//           the gap target and no first token was late and no client left a
//           running request: the slots follow the engine for every class,
//           within the tightest per-token SLO of the classes running there;
//   grow    the extra slots (+ growth x limit, up to max_limit and
//           max_extra_share of the part above it) when the limit held
//           background work back, no other work waited for a slot (it
//           cannot use the extra ones), the engine shows the same room,
//           and, when other work ran meanwhile, the gaps allow it.
//           Background work alone has no per-token target: without other
//           work the gaps neither stop growth nor shrink the limit (a
//           batch-only pool grows to what its engines hold;
//           docs/benchmarks.md, "Background work alone");
//   hold    otherwise (no demand, no gap evidence yet, or between the KV
//           thresholds: the hysteresis keeps noise from moving it).
// Then the part: the whole budget while this gateway is alone on the engine
// (the engine runs and queues no more than it sent); with other clients
// there (other gateway replicas, whose requests the engine's running and
// waiting counts include), the part shrinks in proportion when the engine
// holds more than the budget (to its share of it, and at least x backoff),
// and grows by a quarter of the budget's growth step while it is full with
// other work queued and the engine holds no more (additive increase,
// multiplicative decrease: replicas with demand converge to about equal
// parts, and their sum to the budget, a step or so over or a backoff under). Every replica
// learns the same budget from the same engine figures, so three replicas
// hold between them what one gateway would, and the queue stays in the
// gateways, where the policy orders it (issue 41: with 64 slots each, three
// replicas let the engines queue and critical P99 TTFT rose 288 -> 450 ms).
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
  // Slots above the base at most this share of it (background work's
  // extra slots): each one slows every step for the other classes too.
  double max_extra_share = 0;
  std::chrono::milliseconds interval{200};    // between two decisions
  std::chrono::milliseconds itl_target{30};   // a decode step's time we accept when no class declares one
  double itl_quantile = 0.5;  // share of gaps that must be within itl_target
  uint32_t min_gaps = 32;     // fewer gaps in an interval: no gap verdict (hold)
  double kv_grow_below = 0.8;    // grow only with KV use below this
  double kv_shrink_above = 0.9;  // shrink with KV use above this
  // The engine's part of a first token's wait (dispatch to first token) a
  // class's ttft_slo leaves room for; the rest is the gateway's queue's.
  double ttft_headroom = 0.5;
  // Intervals in a row that must allow the budget (every class's slots) to
  // grow before it does: one interval holds a step or two of a busy engine,
  // and a few decode-only steps in a row are no evidence of room.
  uint32_t budget_patience = 5;
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

// Inter-token gaps seen on a backend's streams over some time.
struct GapCounts {
  uint64_t total = 0;          // how many
  uint64_t within = 0;         // of them, within the gap target
  double seconds = 0;          // their summed length
  double within_seconds = 0;   // of it, in gaps within the gap target
  // First tokens of non-background requests whose class has a ttft_slo,
  // and of them those that took longer from dispatch than ttft_headroom of
  // it (the engine's part of the first token's wait).
  uint64_t firsts = 0;
  uint64_t firsts_slow = 0;
  // Runs of such requests (sent to the engine, not yet ended) that their
  // client left: whatever the SLOs declare, the engine was too slow for
  // them. Gateway-initiated ends (supersede, preemption) are not counted.
  uint64_t abandoned = 0;
};

// What the controller sees of one backend's slots at a scrape or tick.
struct Occupancy {
  uint32_t in_flight = 0;           // its slots in use (this gateway's requests on it)
  bool background_waiting = false;  // background work queued in the gateway could run on it
  bool others_waiting = false;      // other (non-background) work queued for its pool
  bool others_running = false;      // other work running on its pool
  // Of in_flight, other (non-background) work's: slots background work
  // holds are the scheduler's to take back (preemption), not a shortage.
  uint32_t others_in_flight = 0;
};

class CapacityController {
 public:
  using Clock = std::chrono::steady_clock;

  // The limit starts at `start` (the backend's max_concurrency) within
  // [min_limit, max_limit].
  CapacityController(const AdaptiveCapacityConfig& config, uint32_t start, Clock::time_point now);

  // The engine's latest figures (a scrape): requests it queues itself, KV
  // use 0..1, requests it runs (every client's: other replicas' too).
  void engine(double waiting, double kv_usage, double running);
  // Inter-token gaps seen on this backend since the last call.
  void gaps(const GapCounts& seen);
  // The backend's slots at a scrape or tick: the limit holds background
  // work back when it has no free slot while such work waits.
  void occupancy(const Occupancy& seen);

  // Decides when an interval has passed since the last decision; returns
  // whether the limit changed.
  bool update(Clock::time_point now);

  uint32_t limit() const { return limit_; }
  uint32_t base() const { return part_; }              // this gateway's, for every class
  uint32_t extra() const { return limit_ - part_; }    // above the base: background only
  uint32_t budget() const { return budget_; }          // all gateways' on the engine, for every class
  // This gateway's share of the engine: its part of the budget (1 alone);
  // BackendSignal::engine_share.
  double engine_share() const { return static_cast<double>(part_) / budget_; }

 private:
  enum class Verdict { kShrink, kSettle, kHalve, kHold, kGrowBudget, kGrowExtra };
  Verdict judge() const;
  // The smaller of `x` less half its part above the start and x backoff,
  // never below the start (x itself when at or below it).
  uint32_t halved(uint32_t x) const;
  uint32_t extra_ceiling() const;
  // The part after the budget's decision (see the comment at the top).
  void share();

  AdaptiveCapacityConfig config_;
  uint32_t start_;
  uint32_t budget_;  // the engine's, for every class, within [min_limit, max_limit]
  uint32_t part_;    // this gateway's, within [min_limit, budget_]
  uint32_t limit_;   // part_ and the extra slots above it
  Clock::time_point last_decision_;
  // Seen since the last decision.
  GapCounts gaps_;
  bool limited_ = false;  // full with background work waiting, at some call
  bool budget_limited_ = false;  // the part and the budget full, other work waiting, at some call
  uint32_t budget_streak_ = 0;   // decisions in a row that allowed the budget to grow
  bool part_limited_ = false;    // the part full with other work waiting, at some call
  bool in_use_ = false;   // more slots in use than a shrink would leave, at some call
  bool others_waiting_ = false;  // other work waited for a slot, at some call
  bool others_active_ = false;   // other work ran or waited, at some call
  // The latest scrape's figures (kept across decisions until the next one).
  double waiting_ = 0;
  double kv_ = 0;
  double running_ = 0;
  uint32_t in_flight_ = 0;  // the latest occupancy's
  // What the engine holds (running and waiting, every client's), at least
  // this gateway's own requests (the scrape may lag them).
  double load() const { return std::max(running_ + waiting_, static_cast<double>(in_flight_)); }
};

}  // namespace arbiter::sched
