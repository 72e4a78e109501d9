// What goes into and comes out of the scheduler core: the request summary it
// queues, backend signals, and the events the network layer must act on.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/scheduler_config.hpp"

namespace arbiter::sched {

// Names one request inside the scheduler: (generation << 32) | slot. A
// handle whose request is gone (completed, cancelled, expired, superseded
// while queued) is recognised as stale and ignored, so late calls are safe.
struct Handle {
  uint64_t value = 0;  // 0 is never issued
  friend bool operator==(Handle, Handle) = default;
};

// The part of a request the scheduler needs; the body stays with the caller.
// The most a request is charged: sums of queued costs stay far from int64's
// end however large a max_tokens an uncapped class lets through.
inline constexpr int64_t kMaxCostTokens = int64_t{1} << 40;
inline constexpr uint32_t kMaxSlotsPerRequest = 65535;  // Request::sequences' bound

struct Request {
  uint64_t user = 0;                  // caller's tag, echoed in every event about the request
  PoolId pool = 0;                    // model pool it may run on
  ClassId klass = 0;                  // class from the classifier
  TenantId tenant = 0;                // caller's dense tenant number
  int64_t cost_tokens = 1;            // estimated tokens (prompt + max_tokens); clamped to [1, kMaxCostTokens]
  int64_t prompt_tokens = 0;          // estimated prompt (prefill) tokens; 0: not counted
  std::optional<TimePoint> deadline;  // the client's own queue deadline; the class's applies too
  // The client's own TTFT target (x-slo-ttft-ms, bounded by its tenant:
  // core/client_hints.hpp) instead of its class's: under hybrid it orders
  // the request among its tenant's in the class (earliest deadline first)
  // and is the SLO that rescue and borrowing judge it by. nullopt: the class's.
  std::optional<Duration> ttft_slo;
  std::string_view supersede_key;     // empty: none; only requests of the same tenant match
  bool resumable = true;              // false: never a preemption victim (the caller could not resume it)
  // Chained hashes of the prompt's leading blocks (core/prefix_blocks.hpp)
  // for prefix-affinity routing; empty: none. Not copied: the memory must
  // stay valid until the request is completed, cancelled, superseded or
  // expired.
  std::span<const uint64_t> prefix_blocks;
  // Sequences the engine runs for it at once (OpenAI `n`, times a completions
  // batch's prompts): the slots it holds while it runs. It starts whenever its
  // backend has one slot free; the backend then takes nothing new until it is
  // below its limit again. Clamped to [1, kMaxSlotsPerRequest].
  uint32_t sequences = 1;
  // The LoRA adapter it asks for (PoolSpec::adapters' numbering), 0: the
  // base model. It runs only on a backend that serves it, preferably one
  // that has it loaded.
  uint16_t adapter = 0;
};

// What the load monitor knows about one backend.
struct BackendSignal {
  bool saturated = false;  // engine queues requests or KV use over threshold: take nothing new
  bool stale = false;      // metrics too old: ignore `saturated`, use the concurrency limit alone
  bool down = false;       // scrape or connection failed: skipped, and not counted as capacity
  // Requests the engine reports running (every client's: other gateway
  // replicas' too); 0 when unknown or stale. Prefix affinity bounds a
  // backend's load by the larger of this and its own in-flight count.
  uint32_t engine_running = 0;
  // A lower slot limit than max_concurrency while the backend ramps up after
  // an ejection (slow start); 0: max_concurrency.
  uint32_t max_in_flight = 0;
  // Slots above that limit that only background classes' work may take
  // (adaptive capacity, core/adaptive_capacity.hpp): background work in
  // them is not counted against the other classes, which keep the whole
  // limit as their headroom. 0: none.
  uint32_t extra_slots = 0;
  // This gateway's share of the engine (0..1], where other gateway replicas
  // send to it too (adaptive capacity's part of the engine's budget): the
  // backend's prefill backlog limit is scaled by it, so the replicas
  // together leave the engine one backlog's worth of prompts, as one
  // gateway would. 1: the whole engine.
  double engine_share = 1;
};

// The same verdict (saturated, stale, down, slot limits): only a new verdict can let
// work start or stop; a new running count only informs routing.
inline bool same_verdict(const BackendSignal& a, const BackendSignal& b) {
  return a.saturated == b.saturated && a.stale == b.stale && a.down == b.down &&
         a.max_in_flight == b.max_in_flight && a.extra_slots == b.extra_slots && a.engine_share == b.engine_share;
}

// An older request with the same supersede key that a new one replaced.
struct Superseded {
  Handle handle;      // the replaced request
  uint64_t user;      // its caller tag
  bool in_flight;     // true: abort it upstream now, then call complete(); false: already gone
  PoolId pool;        // pool of the backend it ran on (in_flight only)
  BackendId backend;  // where it ran (in_flight only)
  // In flight and chosen as a preemption victim: its run is being stopped,
  // so there is no running generation left to inherit (typing through).
  bool preempting = false;
};

// A successful enqueue.
struct Admission {
  Handle handle;                         // for cancel / complete / requeue_preempted
  std::optional<Superseded> superseded;  // the request this one replaced, if any
};

// Why queued work of a class could not start at the last poll (what a
// request that waited was waiting for).
enum class WaitReason : uint8_t {
  kNone,       // it did not wait
  kCapacity,   // every usable backend was at max_concurrency
  kSaturated,  // backends with free slots were saturated or down (engine signals)
  kPrefill,    // backends with free slots had their prefill backlog full
  kShareCap,   // its class was at its max_share while others had work
  kDebounce,   // held by its class's debounce (a newer keystroke may supersede it)
  kTenantHeadroom,  // its tenant floods the class and the free slots are the others' (tenant_headroom)
  kTenantCap,       // its tenants' requests hold as many slots as their cap allows (tenant_max_running, tenant_max_share, tenant_fair_cap)
  kPaused,          // its class is paused on the pool (set_class_paused: staged degradation)
};
inline constexpr std::size_t kWaitReasons = 9;
std::string_view wait_reason_name(WaitReason reason);

// Recent service of one tenant in one class of one pool, tokens per second
// (Scheduler::local_service / set_remote_service).
struct ServiceRate {
  PoolId pool = 0;
  ClassId klass = 0;
  TenantId tenant = 0;
  double per_second = 0;
};  // "none", "capacity", ...

// Start this request on this backend now.
// Why a dispatch went to its backend (the audit trail's `placement`).
enum class Placement : uint8_t {
  kLeastLoaded,  // the backend with the most room (no prompt prefix to follow, or affinity off)
  kPrefixHeld,   // it holds the prompt's longest cached prefix (prefix affinity)
  kPrefixNew,    // no backend held the prefix within bounds: affinity placed it (earliest first token)
  kOverBound,    // every backend was past the affinity load bound: the one with the most room
  kAvoidFailed,  // a retry after a failed run: another backend than the one that failed
  kInherited,    // it took over the slot of the running request it superseded (typing through)
  kAdapterLoaded,  // a LoRA request: the backend has its adapter loaded (LoRA affinity)
  kAdapterLoad,    // a LoRA request: no backend with it loaded had room; this one has a free adapter slot
  kAdapterWait,    // a LoRA request: every backend serving it has its adapter slots busy; it waits in the engine
};
std::string_view placement_name(Placement placement);

struct Dispatch {
  Handle handle;         // the request
  uint64_t user;         // its caller tag
  PoolId pool;           // the pool of that backend: its own, or one lending it a slot
  BackendId backend;     // the backend whose slot it now holds
  ClassId klass;         // its class
  Duration queue_wait;   // since enqueue (or since the last requeue): histogram sample
  int engine_priority;   // the class's engine priority, for vLLM's `priority` field
  uint32_t preemptions;  // > 0: a resumed request; continue from its checkpoint
  int64_t cost_tokens;   // tokens charged for this run (the remaining cost when resumed)
  WaitReason waited_for; // kNone when it started at once; else why its class's work waited
  Placement placement = Placement::kLeastLoaded;  // why this backend
  uint16_t prefix_blocks = 0;  // kPrefixHeld: the prompt's blocks the backend was known to hold
};

// A queued request whose deadline passed: answer 503 with this Retry-After.
struct Expired {
  Handle handle;                          // the request (now gone)
  uint64_t user;                          // its caller tag
  PoolId pool;                            // its pool
  ClassId klass;                          // its class
  Duration waited;                        // time it spent queued
  std::chrono::milliseconds retry_after;  // expected drain time of its class queue
  WaitReason waited_for;                  // why its class's work was waiting
  bool no_backend = false;                // its pool lost every backend: not a deadline
};

// Abort this in-flight request upstream, keep its output, and call
// requeue_preempted() (or complete() if it finished first).
struct Preemption {
  Handle handle;      // the victim
  uint64_t user;      // its caller tag
  PoolId pool;        // the pool of the backend it runs on (a lender's, if borrowed)
  BackendId backend;  // the backend it runs on
  ClassId klass;      // its class
};

// Everything poll() decided; reuse one instance to avoid allocations.
struct Actions {
  std::vector<Expired> expired;         // answer 503
  std::vector<Dispatch> dispatches;     // start upstream
  std::vector<Preemption> preemptions;  // abort and requeue
  void clear() {
    expired.clear();
    dispatches.clear();
    preemptions.clear();
  }
};

// What cancel() did.
enum class CancelOutcome {
  kUnknown,   // stale handle: nothing to do
  kDequeued,  // removed from its queue; it will never be dispatched
  kReleased,  // it was in flight: its slot is free, abort it upstream
};

// Event counts per class (summed over pools), monotonic.
struct ClassCounters {
  uint64_t enqueued = 0;              // admitted by enqueue()
  uint64_t rejected_class_full = 0;   // 429: class queue at max_queue
  uint64_t rejected_tenant_full = 0;  // 429: tenant queue at max_queue_per_tenant
  uint64_t rejected_predicted = 0;    // 429: predicted to wait past its deadline (hybrid)
  uint64_t dispatched = 0;            // dispatches, resumed ones included
  uint64_t completed = 0;             // complete() on a running request
  uint64_t cancelled_queued = 0;      // client cancels removed from a queue
  uint64_t cancelled_in_flight = 0;   // client cancels of running requests
  uint64_t superseded_queued = 0;     // replaced before dispatch
  uint64_t superseded_in_flight = 0;  // replaced while running (aborted upstream)
  uint64_t typed_through = 0;         // superseded running requests whose generation a newer one inherited
  uint64_t preempted = 0;             // chosen as preemption victims (reclaimed included)
  uint64_t expired = 0;               // deadline passed in the queue (503)
  uint64_t rejected_no_backend = 0;   // 503 at enqueue: its pool had no live backend
  uint64_t no_backend = 0;            // 503 while queued: its pool lost its last live backend
  uint64_t borrowed = 0;              // dispatches onto a lending pool's backend
  uint64_t reclaimed = 0;             // borrowed work preempted for the lender's own
  uint64_t over_fair_share = 0;       // dispatches of a tenant over its fair-share cap, on slots nobody else could use
  uint64_t carried_over = 0;          // placed by carry_over() at a config reload
};

// All counters.
struct Counters {
  std::vector<ClassCounters> classes;  // indexed by ClassId
  uint64_t stale_dispatches = 0;       // dispatches to a backend whose metrics were stale
  // By pool: polls where a guarantee's need found no victim but ones the
  // thrash guard (preempt_guard) kept; the class waits for a slot to free.
  std::vector<uint64_t> guard_held;
  ClassCounters total() const;         // sum over classes
};

// One tenant queue's depth, for the per-tenant queue-depth gauge.
struct TenantDepth {
  PoolId pool;      // pool
  ClassId klass;    // class
  TenantId tenant;  // tenant
  uint32_t queued;  // requests waiting (debounce holds included)
};

}  // namespace arbiter::sched
