// The scheduler's internal bookkeeping: request nodes, tenant queues, class
// queues and pools. Private to scheduler*.cpp; in a header only because the
// Scheduler class holds these by value (no pimpl indirection on the hot path).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/prefix_index.hpp"
#include "core/sched_heap.hpp"
#include "core/sched_rate.hpp"
#include "core/scheduler_types.hpp"

namespace arbiter::sched::detail {

inline constexpr uint32_t kNil = UINT32_MAX;  // "no node / no tenant queue"
inline constexpr uint16_t kNoAvoid = UINT16_MAX;  // Node::avoid: no backend to avoid

// A time point as the heaps' integer key: its ticks since the clock's epoch.
inline int64_t ticks(TimePoint t) { return t.time_since_epoch().count(); }

// Which of a backend's slots a dispatch pass may fill.
enum class SlotPass : uint8_t {
  kLimit,   // the limit's slots (max_concurrency, or what adaptive capacity allows)
  kExtra,   // the extra slots above the limit (adaptive capacity; background work only)
  kExcess,  // below the limit counting everything running: a flooder's excess, background work
};

// Time constant of the recent service shares of tenants in a class: long
// enough to smooth single dispatches, short enough that a flood is noticed
// within a second or two.
inline constexpr Duration kShareWindow = std::chrono::seconds(2);

// Share of a backend's prefill backlog limit that classes below the top
// priority may fill: the rest is headroom, so the top class's next request
// finds a short prefill queue in the engine (hybrid).
inline constexpr double kLowerTierBacklog = 0.5;

// Fewest requests a tenant must have queued in a class before a new one
// may be answered early (predicted to miss its deadline).
inline constexpr uint32_t kEarlyAnswerMinQueued = 8;

// A tenant served more than this multiple of its weight's share of a class
// (or more than halfway from that share to all of it) loses arrival order
// there and is served by fair queueing (hybrid).
inline constexpr double kOveruse = 2.0;

// A tenant served more than this multiple of its weight's share among the
// class's busy tenants (work queued or running; or more than halfway from
// that share to all of it) is flooding: tenants within it go first, and
// with `tenant_headroom` it may not take a pool's last slots (hybrid).
// Between kOveruse and this, tenants of nearly equal demand keep arrival
// order (issue 11's sweep: strict fairness there costs goodput).
inline constexpr double kFlooding = 3.0;

// Heap entries the search for the fairest tenant that is not flooding may
// look at (Scheduler::fairest_not_flooding): a handful of flooders is
// skipped, a class where most tenants flood falls back to the fairest.
inline constexpr uint32_t kFloodSearch = 16;

enum class NodeState : uint8_t {
  kFree,        // slot on the free list
  kHeld,        // waiting out its debounce: not dispatchable yet
  kQueued,      // dispatchable, in its order heap
  kInFlight,    // holds a backend slot
  kAborting,    // superseded while running: holds its slot until complete()/cancel()
  kPreempting,  // chosen as a victim: holds its slot until requeue_preempted()/complete()
};

// One request: 144 bytes. Slots are reused through a free list, so a steady
// state allocates nothing per request except for a supersede key.
struct Node {
  uint64_t user = 0;         // caller's tag
  uint64_t seq = 0;          // arrival number: the last tie-break everywhere
  uint64_t start_seq = 0;    // dispatch number: "most recently started" for victims
  int64_t cost = 0;          // estimated tokens of the next (or current) run
  int64_t charged = 0;       // tokens charged to class/tenant at dispatch
  TimePoint queued_since{};  // enqueue or requeue time: queue-wait sample
  TimePoint deadline{};      // EDF key; kept across requeues so standing survives
  TimePoint slo_at{};        // arrival + its ttft_slo (the client's hint, or its class's); max: none
  // Its entry in the supersede-key map while it is the newest request with
  // that key (map keys are stable in memory); null otherwise. Kept out of
  // the node so unkeyed requests pay 8 bytes, not a string.
  const std::string* key = nullptr;
  const uint64_t* prefix = nullptr;  // Request::prefix_blocks (caller's memory), prefix_len of them
  uint32_t generation = 0;       // bumped on free: stale handles do not match
  uint32_t pool = 0;             // PoolId
  uint32_t klass = 0;            // ClassId
  uint32_t tenant = kNil;        // index of its TenantQueue
  uint32_t backend = 0;          // BackendId while in flight
  uint32_t run_pool = 0;         // PoolId of that backend: `pool`, or a lender's (borrowed)
  uint32_t order_pos = kNoPos;   // position in its order heap or in the held heap
  uint32_t expiry_pos = kNoPos;  // position in the expiry heap (own deadline only)
  uint32_t urgent_pos = kNoPos;  // position in its class's urgency heap (own deadline, hybrid)
  uint32_t prev = kNil;          // list link: arrival list while queued, victim list while running
  uint32_t next = kNil;          // list link (also the free-list link)
  uint16_t preemptions = 0;      // times preempted so far (saturates)
  uint16_t avoid = kNoAvoid;     // a backend of its own pool whose run failed: a retry goes elsewhere if it can
  uint32_t prompt = 0;           // estimated prompt tokens: prefill backlog at dispatch
  uint32_t prefix_len = 0;       // prefix blocks
  uint16_t cached_blocks = 0;    // prefix blocks its backend held at dispatch: not in its prefill backlog
  uint16_t slots = 1;            // slots it holds while running (Request::sequences)
  uint16_t adapter = 0;          // LoRA adapter (Request::adapter), 0: none
  bool expires : 1 = false;      // false once requeued: a started request is never 503'd
  bool resumable : 1 = true;     // may be a preemption victim (Request::resumable)
  bool linked : 1 = false;       // on its class's arrival list (queued) or victim list (running)
  bool prefilling : 1 = false;   // running, its prompt counted in its backend's pending prefill
  bool extra_slot : 1 = false;   // running in one of its backend's extra slots (Backend::extra)
  bool excess_slot : 1 = false;  // started over its tenant's fair-share cap (Backend::excess_taken)
  bool hinted : 1 = false;       // slo_at is the client's TTFT hint, not its class's: ordered by it (order_key)
  bool lora_swap : 1 = false;    // running, placed in Placement::kAdapterWait, no first token yet
  NodeState state = NodeState::kFree;  // lifecycle state
};

// The requests of one tenant in one class of one pool. Created on the first
// request, freed when nothing is queued or running, so idle tenants cost
// nothing and the end state of a drained scheduler is empty.
struct TenantQueue {
  TenantId tenant = 0;          // whose queue
  uint32_t pool = 0;            // PoolId
  uint32_t klass = 0;           // ClassId
  double weight = 1;            // tenant weight
  double vtime = 0;             // virtual start of its next request (tokens / weight)
  uint64_t share_seq = 0;       // activation number: tie-break in the class's tenant heap
  bool deferred = false;        // out of its class's order until the end of the poll (defer_tenant)
  uint32_t queued = 0;          // held + ready requests
  uint32_t in_flight = 0;       // slots its requests hold
  int64_t queued_cost = 0;      // tokens queued: tenant drain time
  uint32_t share_pos = kNoPos;  // position in the class's tenant heap (while it has ready work)
  IndexedHeap<OrderKey> queue;  // ready requests by (order_key, seq): EDF then arrival (hybrid)
  DecayingRate served{kShareWindow};  // tokens dispatched: over its share or not (hybrid)
  double remote = 0;            // tokens per second other replicas serve it (set_remote_service)
  uint32_t next_free = kNil;    // free-list link
};

// One class in one pool.
struct ClassQueue {
  explicit ClassQueue(Duration rate_window)
      : completed(rate_window), departed(rate_window), dispatched(kShareWindow) {}
  uint32_t ready = 0;             // dispatchable requests
  bool paused = false;            // no new dispatch (set_class_paused: a degradation stage)
  uint32_t queued = 0;            // ready + held requests (the max_queue limit)
  int64_t queued_cost = 0;        // tokens queued: drain time
  uint32_t in_flight = 0;         // slots held (aborting, preempting and borrowed included)
  uint32_t borrowed = 0;          // of them, slots on lending pools' backends (any state)
  uint32_t excess = 0;            // of them, slots its tenants hold over their fair-share cap (Node::excess_slot)
  uint32_t preempting = 0;        // slots of its own pool held by chosen victims
  uint32_t aborting = 0;          // slots of its own pool held by superseded requests
  double vtime = 0;               // class virtual time among classes (hybrid)
  double tenant_vclock = 0;       // virtual clock of its tenant heap (hybrid)
  double active_weight = 0;       // sum of weights of tenants with ready work (hybrid)
  double busy_weight = 0;         // sum of weights of tenants with work queued or running
  uint32_t busy_tenants = 0;      // how many: at 0 the weight resets, so no float drift builds up
  double remote = 0;              // tokens per second other replicas serve the class (set_remote_service)
  IndexedHeap<ShareKey> tenants;  // tenants with ready work by vtime (hybrid)
  // Queued requests whose deadline is the class's (arrival + max_queue_wait),
  // in arrival order, which is also deadline and urgency order: expiry and
  // aging read the head, removal is O(1). Only requests with a tighter
  // deadline of their own need the heaps (expiry_ and `urgent`).
  uint32_t arrivals_head = kNil;                 // oldest
  uint32_t arrivals_tail = kNil;                 // newest
  TimePoint oldest_deadline = TimePoint::max();  // arrivals_head's deadline, cached so a poll
                                                 // reads no node to check expiry or aging
  IndexedHeap<OrderKey> urgent;  // ready requests with their own deadline, by urgency (hybrid)
  IndexedHeap<OrderKey> order;   // ready requests by arrival (priority policy)
  WaitReason blocked = WaitReason::kNone;  // why its ready work waited at the last poll
  bool tenant_held = false;  // this poll: its next request is a flooding tenant's, kept off tenant_headroom
  // The poll (Scheduler::polls_) in which every tenant with ready work here
  // was over its fair-share cap or at its own: the first ones' excess may start.
  uint64_t excess_open = 0;
  uint32_t victims_head = kNil;  // oldest running preemptible request (hybrid)
  uint32_t victims_tail = kNil;  // most recently started one
  DecayingRate completed;        // completion rate: drain time for Retry-After
  DecayingRate departed;         // requests leaving its queue per second, any way: predicted waits
  DecayingRate dispatched;       // tokens dispatched: what its tenants' shares are of (hybrid)

  // Slots held on its own pool's backends: what shares and caps count.
  uint32_t own_in_flight() const { return in_flight - borrowed; }
};

// One backend.
struct Backend {
  uint32_t configured = 0;  // max_concurrency
  uint32_t limit = 0;       // slots it takes now: configured, or less in slow start (signal.max_in_flight)
  uint32_t in_flight = 0;   // slots held
  BackendSignal signal;     // latest load-monitor verdict
  double prefill_rate = 0;  // prompt tokens prefilled per second; 0: backlog not limited
  double max_backlog = 0;   // backlog (tokens) at which it takes nothing new; 0: no limit
  // prefill_rate and max_backlog with the whole engine to this gateway
  // (signal.engine_share 1); a share of the engine prefills a share of it.
  double full_rate = 0;
  double full_backlog = 0;
  double backlog = 0;       // prompt tokens dispatched and not yet prefilled, as of backlog_at
  TimePoint backlog_at{};   // when `backlog` was last brought up to date
  double pending = 0;       // prompts of its running requests with no first token reported
  uint32_t extra = 0;        // slots above `limit` for background work only (signal.extra_slots)
  uint32_t extra_taken = 0;  // of in_flight, slots of requests started in an extra slot (Node::extra_slot)
  // Of in_flight, slots of requests a flooding tenant started over its
  // fair-share cap (Node::excess_slot), on slots nobody else could use then.
  uint32_t excess_taken = 0;
  // LoRA (PoolSpec::adapters): the adapters it serves, sorted, and its
  // engine's adapter slots as this scheduler filled them: each adapter it
  // sent there, its requests running, and when it last sent one. Kept to
  // max_loras entries, least recently used idle ones dropped first.
  std::vector<uint16_t> adapters;
  uint32_t max_loras = 1;
  struct Lora {
    uint16_t adapter = 0;
    uint32_t running = 0;
    uint64_t last_used = 0;
    // Of `running`: sent while every slot was busy with other adapters, no
    // first token yet (Node::lora_swap): the engine must drain a slot for it.
    uint32_t swapping = 0;
  };
  std::vector<Lora> loras;

  // Slots in use as a pass sees them, and its slot count. Work started in
  // an extra slot or as a tenant's excess is never counted against the
  // limit, also after the extra slots shrank under it or others came to
  // wait (it drains; the others keep the whole limit meanwhile). A tenant's
  // excess starts only while the backend holds fewer than `limit` in all
  // (background work's extra slots aside), so the engine runs at most twice
  // the limit while both drain.
  uint32_t used(SlotPass pass) const {
    switch (pass) {
      case SlotPass::kLimit: return in_flight - extra_taken - excess_taken;
      case SlotPass::kExtra: return in_flight;
      case SlotPass::kExcess: return in_flight - extra_taken;
    }
    return in_flight;
  }
  uint32_t slots(SlotPass pass) const {
    return pass == SlotPass::kExtra ? limit + std::max(extra, extra_taken) : limit;
  }
};

// One model pool.
struct Pool {
  explicit Pool(Duration rate_window) : completed(rate_window) {}
  std::vector<Backend> backends;    // its backends
  std::vector<ClassQueue> classes;  // indexed by ClassId
  uint32_t capacity = 0;            // slots on backends not down: what shares are shares of
  uint32_t extra = 0;               // extra slots on backends not down: background classes' too
  uint32_t next_backend = 0;        // rotating tie-break of the backend pick
  uint32_t preempting = 0;          // slots of victims on its backends chosen but not yet requeued
  uint32_t aborting = 0;            // slots of superseded requests on its backends not yet released
  std::vector<uint32_t> lenders;    // PoolSpec::lenders
  uint32_t lent = 0;                // its slots held by other pools' requests
  uint32_t excess = 0;              // slots its classes' tenants hold over their fair-share cap
  uint32_t borrowed_head = kNil;    // oldest borrowed preemptible request on its backends (hybrid)
  uint32_t borrowed_tail = kNil;    // most recently started one: reclaimed first
  double class_vclock = 0;          // virtual clock among classes (hybrid)
  double prefill_rate = 0;          // its fastest backend's prefill_rate: SLO rescue estimate
  IndexedHeap<OrderKey> fifo;       // ready requests by arrival (fifo policy)
  PrefixIndex prefix;               // prefix affinity; disabled without cache sizes
  DecayingRate completed;           // pool completion rate: fallback for drain time
  // The earliest end of a thrash guard that kept a victim, or a loan, that
  // the last poll wanted: next_wakeup() polls then. max: none.
  TimePoint guard_ends = TimePoint::max();
};

// Slots a class lacks to reach its min_share of the pool (<= 0: none).
inline double share_deficit(double min_share, const ClassQueue& cq, double capacity) {
  return std::ceil(min_share * capacity - 1e-9) - cq.own_in_flight();
}

}  // namespace arbiter::sched::detail
