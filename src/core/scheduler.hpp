// The scheduler core: queues per model pool, late binding to backends, and
// the fifo / priority / hybrid arbitration policies. Pure: no I/O, no
// threads, the clock is a parameter of every call. Not thread-safe: the
// network layer holds one lock (or strand) around every call.
//
// Call sequence for the network layer (docs/scheduler.md has the details):
//   enqueue(request, now)     admit, or 429 (ApiError with retry_after). If
//                             the result names a superseded in-flight
//                             request, abort it upstream and later
//                             complete() it; a superseded queued one is gone:
//                             answer its client (e.g. 409/499 "superseded").
//   poll(now, actions)        after every call that changes state and when
//                             the timer set at next_wakeup() fires:
//                               actions.expired      -> answer 503 + Retry-After
//                               actions.dispatches   -> start upstream on backend
//                               actions.preemptions  -> abort upstream, keep the
//                                 partial output, then requeue_preempted()
//   complete(handle, now, tokens)  the upstream exchange ended (any outcome)
//   cancel(handle)            client went away (queued: dequeued; running:
//                             slot freed, abort upstream)
//   set_backend_state(...)    whenever the load monitor's verdict or the
//                             engine's running count changes; poll() after
//                             it when it returns true (a new verdict)
//   next_wakeup()             earliest deadline or debounce end: set a timer
// Handles of finished requests become stale; calls with them do nothing.
// `now` must not go backwards from one call to the next.
#pragma once

#include <algorithm>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "core/key_rhythm.hpp"
#include "core/sched_heap.hpp"
#include "core/sched_index.hpp"
#include "core/sched_state.hpp"
#include "core/scheduler_config.hpp"
#include "core/scheduler_types.hpp"

namespace arbiter::sched {

// The 503 for an Expired request (ErrorCode::kNoBackend: no backend could
// take it in time), carrying the computed Retry-After.
// `waited_for` (Expired::waited_for) is named in the message.
ApiError deadline_error(std::chrono::milliseconds retry_after,
                        WaitReason waited_for = WaitReason::kNone);

// The 503 of a request whose pool has no live backend (every one down by
// its engine signals): answered at once rather than after its queue time.
ApiError no_backend_error(std::chrono::milliseconds retry_after);
// Its Retry-After: a down backend is scraped again within a second.
inline constexpr std::chrono::milliseconds kNoBackendRetryAfter{1000};

// The 429 of an early answer: the request would wait about `wait_s` where
// its deadline allows `allowed_s`; Retry-After is the difference, within
// [min_retry, max_retry] (a prediction from a near-zero rate can be huge).
ApiError predicted_late(std::string_view klass, double wait_s, double allowed_s,
                        std::chrono::milliseconds min_retry, std::chrono::milliseconds max_retry);

class Scheduler {
 public:
  // The config is validated (see validate()); the error says what is wrong.
  static std::expected<Scheduler, std::string> create(SchedulerConfig config);

  // Admits a request at `now`, or rejects it with 429 and a Retry-After from
  // the expected drain time of the full queue. A request with a supersede key
  // replaces the tenant's previous request with that key. O(log n).
  std::expected<Admission, ApiError> enqueue(const Request& request, TimePoint now);

  // The client went away. O(log n).
  CancelOutcome cancel(Handle handle);

  // A running request's upstream exchange ended (finished, failed, or was
  // aborted after supersede/preemption): frees its slot. `actual_tokens`
  // (prompt + generated) corrects the estimate charged at dispatch. Returns
  // false for a stale handle or a request that is not running. O(log n).
  bool complete(Handle handle, TimePoint now, std::optional<int64_t> actual_tokens = std::nullopt);

  // Typing through (core/typing_through.hpp): `heir`, still held or queued,
  // takes over the running generation of `old`, the request it superseded
  // (aborting, same pool, class and tenant), instead of it being aborted:
  // the heir holds old's slot on old's backend without a dispatch, and old
  // is gone. The heir is never a preemption victim (its run is not its own
  // to resume). False, with nothing changed, unless the class allows it
  // (ClassPolicy::typing_through) and both handles are as described. O(log n).
  bool inherit(Handle heir, Handle old, TimePoint now);

  // A running request's first output token arrived: its prompt is prefilled
  // and no longer counts in its backend's prefill backlog (optional: without
  // it the backlog drains by the estimate alone). False for a stale handle
  // or a request not running. O(1).
  bool first_token(Handle handle, TimePoint now);

  // A preemption victim was aborted upstream: frees its slot and queues it
  // again with its original arrival and deadline order (so it goes first in
  // its tenant queue) and `remaining_cost` tokens for the continuation. A
  // requeued request never expires and ignores queue limits. Returns false
  // unless the handle names a request being preempted. O(log n).
  bool requeue_preempted(Handle handle, int64_t remaining_cost, TimePoint now);

  // A running request's upstream run failed before it finished (a retry of
  // a request the client has seen nothing of yet, or a resumable one's
  // failover mid-stream): frees its slot and queues it again as
  // requeue_preempted() does, to run on another backend of its pool when
  // one has room (the failed one only when no other has). Returns false
  // unless the handle names a running request. O(log n).
  bool requeue_failed(Handle handle, int64_t remaining_cost, TimePoint now);

  // Expires overdue requests, starts debounced ones, dispatches everything
  // that can start now and (hybrid) chooses preemption victims. Appends to
  // `out`. Cost: O(P * (B + C)) per call plus O(C + B + log n) per decision,
  // for P pools, B backends per pool, C classes.
  void poll(TimePoint now, Actions& out);

  // When poll() next has something to do on its own (a deadline or the end
  // of a debounce); nullopt when nothing is waiting on time. O(P * C).
  std::optional<TimePoint> next_wakeup() const;

  // Latest load-monitor verdict and running count for one backend. Returns
  // whether the verdict changed (same_verdict()): only then may poll() find
  // new work to start. O(B) when the backend goes down or up, else O(1).
  bool set_backend_state(PoolId pool, BackendId backend, BackendSignal signal);

  // Pauses or resumes new dispatch of a class's queued work on a pool
  // (staged degradation, core/overload/degradation.hpp): a paused class is
  // capped at nothing, so its running work finishes and its queued work
  // waits (reason kPaused, deadlines still run) and triggers no
  // preemption. Hybrid only: the fifo and priority orders do not skip a
  // class. Returns whether it changed (a resume may let work start: poll).
  // False for an unknown pool or class. O(1).
  bool set_class_paused(PoolId pool, ClassId klass, bool paused);
  bool class_paused(PoolId pool, ClassId klass) const;

  // The prompt prefix a backend's engine caches, in tokens (its KV size, as
  // the engine reports it): prefix affinity's index of it holds that much.
  // False for an unknown backend. O(1).
  bool set_prefix_cache(PoolId pool, BackendId backend, uint64_t tokens);
  uint64_t prefix_cache(PoolId pool, BackendId backend) const;  // tokens

  // Sets a tenant's weight for its tenant queues, live ones included; false
  // (and no change) unless weight is finite and > 0. O(tenant queues).
  bool set_tenant_weight(TenantId tenant, double weight);

  // A config reload (Dispatcher::reconfigure) builds a new scheduler and
  // carries the old one's requests over, in their order of arrival.
  struct Carried {
    bool running = false;  // in flight on run_pool's backend, else queued
    PoolId run_pool = 0;
    BackendId backend = 0;
    // Queued: when it expires, as it was told (TimePoint::max(): never).
    TimePoint deadline = TimePoint::max();
  };
  // Places a request carried over from the previous config's scheduler,
  // without admission limits, early answer or debounce hold: queued, with
  // its old deadline, behind its tenant queue's own; or running on
  // `carried.backend`, counted there as a dispatch is, with no dispatch
  // to deliver. Its supersede key is kept (the first carried request with
  // a key holds it). nullopt for an unknown pool, class or backend. O(log n).
  std::optional<Handle> carry_over(const Request& request, const Carried& carried, TimePoint now);
  // The previous scheduler's counters, added to this one's: `classes[c]`
  // (old class c) is this one's class or none (a class the config dropped),
  // `pools[p]` likewise. Metrics export counters as totals: they carry on.
  void carry_counters(const Counters& old, std::span<const std::optional<ClassId>> classes,
                      std::span<const std::optional<PoolId>> pools);
  // A queued (or held) request's deadline, TimePoint::max() when it never
  // expires; nullopt when it is not queued. O(1).
  std::optional<TimePoint> queue_deadline(Handle handle) const;

  // Gauges and counters for metrics; cheap unless noted.
  const Counters& counters() const { return counters_; }
  uint32_t queue_depth(PoolId pool, ClassId klass) const;  // held + ready
  uint32_t ready_depth(PoolId pool, ClassId klass) const;  // dispatchable now
  WaitReason waits_for(PoolId pool, ClassId klass) const;   // why its ready work waited at the last poll
  uint32_t class_in_flight(PoolId pool, ClassId klass) const;  // borrowed slots included
  uint32_t class_borrowed(PoolId pool, ClassId klass) const;   // of them, on lenders' backends
  uint32_t lent(PoolId pool) const;  // its slots held by other pools' requests
  uint32_t tenant_queue_depth(PoolId pool, ClassId klass, TenantId tenant) const;
  std::vector<TenantDepth> tenant_queue_depths() const;  // O(tenant queues)
  uint32_t backend_in_flight(PoolId pool, BackendId backend) const;
  // Of them, slots tenants over their fair-share cap took when nobody else
  // could use them: not counted against the backend's limit.
  uint32_t backend_over_fair_share(PoolId pool, BackendId backend) const;
  uint32_t class_over_fair_share(PoolId pool, ClassId klass) const;  // the same, per class
  uint32_t backend_limit(PoolId pool, BackendId backend) const;  // slots it takes now (0: unknown backend)
  // Its latest signal (set_backend_state); a default one for an unknown backend.
  BackendSignal backend_signal(PoolId pool, BackendId backend) const;
  // Its prefill backlog over the backlog limit, 0..1 (0 without a limit):
  // how full the engine's prefill queue is as the scheduler estimates it.
  double prefill_fill(PoolId pool, BackendId backend, TimePoint now) const;
  uint32_t capacity(PoolId pool) const;                 // slots on backends not down
  std::size_t queued() const { return queued_; }        // all pools, held included
  std::size_t in_flight() const { return in_flight_; }  // all pools
  std::size_t tenant_queues() const;                    // live tenant queues
  std::size_t supersede_keys() const { return keys_.size(); }
  // Expected time for the class queue to drain at the recent completion rate.
  std::chrono::milliseconds expected_drain(PoolId pool, ClassId klass, TimePoint now) const;

  // Tenant fairness across gateway replicas in front of the same engines
  // (hybrid). local_service: this replica's recent service per (pool,
  // class, tenant) with work here, for the others. set_remote_service: the
  // other replicas' rates, as of now, replacing the last ones; the tenant
  // rule counts them with this replica's own, and each tenant with work
  // here is charged in virtual time for what they served it over
  // `interval` (the time since the last exchange), so fair queueing sees
  // the fleet's service; a tenant with no work here gets its rate and that
  // charge when its queue is made, before the next exchange. O(live tenant
  // queues + rates).
  std::vector<ServiceRate> local_service(TimePoint now) const;
  void set_remote_service(const std::vector<ServiceRate>& rates, Duration interval);

  const SchedulerConfig& config() const { return config_; }
  std::optional<ClassId> find_class(std::string_view name) const;
  std::optional<PoolId> find_pool(std::string_view name) const;

 private:
  using Node = detail::Node;
  using NodeState = detail::NodeState;
  using TenantQueue = detail::TenantQueue;
  using ClassQueue = detail::ClassQueue;
  using Pool = detail::Pool;
  using SlotPass = detail::SlotPass;

  explicit Scheduler(SchedulerConfig config);
  // Allocates and queues a node (enqueue's admission done): counted in its
  // class and tenant queues, its deadline tracked, its key taken; held for
  // its debounce when `may_hold`, else ready. Returns its id.
  uint32_t place(const Request& request, uint32_t tenant, TimePoint now, TimePoint deadline,
                 TimePoint class_deadline, std::string key, bool may_hold);

  // Heap position setters: each heap tells its members where they moved.
  auto order_pos() {
    return [this](uint32_t id, uint32_t pos) { nodes_[id].order_pos = pos; };
  }
  auto expiry_pos() {
    return [this](uint32_t id, uint32_t pos) { nodes_[id].expiry_pos = pos; };
  }
  auto urgent_pos() {
    return [this](uint32_t id, uint32_t pos) { nodes_[id].urgent_pos = pos; };
  }
  auto share_pos() {
    return [this](uint32_t tq, uint32_t pos) { tenants_[tq].share_pos = pos; };
  }

  // Node and tenant-queue slabs.
  uint32_t alloc_node();
  void free_node(uint32_t id);
  uint32_t resolve(Handle handle) const;  // kNil when stale
  Handle handle_of(uint32_t id) const;
  uint32_t tenant_queue(uint32_t pool, uint32_t klass, TenantId tenant);  // get or create
  uint32_t find_tenant_queue(uint32_t pool, uint32_t klass, TenantId tenant) const;
  void maybe_free_tenant(uint32_t tq);

  // Queue membership (scheduler_queues.cpp).
  // Its place in its class (hybrid: its tenant's queue, and earliest
  // deadline first among tenants within their share), in ticks: its
  // deadline, or with a TTFT hint tighter than its class's TTFT target that
  // much earlier, so that a class's requests go by arrival + their TTFT
  // target. A looser hint keeps its deadline: every request must start by
  // its queue deadline. Unhinted: exactly its deadline, as always.
  int64_t order_key(const Node& n) const;
  void make_ready(uint32_t id);    // held/requeued -> kQueued in its policy's order heap
  void remove_ready(uint32_t id);  // kQueued -> out of every order heap
  void drop_queued(uint32_t id);   // held or queued -> gone (cancel, supersede, expiry)
  void leave_queue(uint32_t id, TimePoint at);  // held or queued -> out of every queue and count (node kept)
  void release_slot(uint32_t id);  // running -> slot freed (node kept)
  void prefilled(Node& n);         // its prompt leaves its backend's pending prefill
  void retire(uint32_t id);        // running -> slot freed and node gone
  void track_deadline(uint32_t id, TimePoint class_deadline);  // list or heap, by whose deadline
  void untrack_deadline(uint32_t id);                          // off the arrival list or heap
  // Intrusive doubly linked lists through Node::prev/next: O(1) both ways.
  void list_append(uint32_t& head, uint32_t& tail, uint32_t id);
  void list_remove(uint32_t& head, uint32_t& tail, uint32_t id);
  void unlink_victim(uint32_t id);          // off its class's victim list, if on it
  void charge(uint32_t id, double tokens);  // class and tenant virtual time (hybrid)
  // charge() plus the class's and tenant's recent service (tenant shares):
  // tokens dispatched, or a correction of them (hybrid).
  void serve(uint32_t id, double tokens, TimePoint now);
  std::optional<Superseded> supersede(uint32_t victim);
  std::chrono::milliseconds drain_time(uint32_t pool, uint32_t klass, double tokens,
                                       double fraction, TimePoint now) const;
  ApiError queue_full(uint32_t pool, uint32_t klass, const TenantQueue* tq, bool tenant_limit,
                      TimePoint now) const;
  // Seconds until a new request of the tenant queue starts, at the
  // tenant's part of its class's recent start rate (hybrid early answer);
  // nullopt when there is nothing to judge by (see early_reject_margin).
  std::optional<double> predicted_wait_s(uint32_t pool, uint32_t klass, const TenantQueue* tq,
                                         TimePoint now) const;

  // requeue_preempted / requeue_failed: the slot back, the request first in its tenant queue.
  void requeue(uint32_t id, int64_t remaining_cost, TimePoint now);

  // Decisions (scheduler_dispatch.cpp).
  void expire_due(TimePoint now, Actions& out);
  void expire(uint32_t id, TimePoint now, Actions& out);
  // Fail fast: a pool with no live backend (and none lent to it) serves
  // nothing; its queued requests are answered at once. O(P), and O(nodes)
  // for a pool that just lost its last backend.
  bool stranded(uint32_t pool) const;
  void expire_stranded(TimePoint now, Actions& out);
  void promote_held(TimePoint now);
  void note_blocked(uint32_t pool, TimePoint now);  // ClassQueue::blocked after dispatching
  // `pass`: kExtra only into the backends' extra slots (Backend::extra),
  // for background work that is next in the policy's order; kExcess, after
  // the others, into slots nobody else could use, also for tenants over
  // their fair-share cap (work conservation).
  void dispatch_pool(uint32_t pool, TimePoint now, Actions& out, SlotPass pass = SlotPass::kLimit);
  // What a pass over a pool's backends saw besides its pick, for route():
  // which are open (open_to, the first 64) and the sum of affinity_load over
  // those not down (affinity_bound's), so a routed decision passes over the
  // backends once less, twice less with prefix affinity.
  struct BackendScan {
    uint64_t open = 0;  // bit i: backend i is open, i < 64
    uint64_t load = 0;
  };
  // kNil when no backend has room; `fraction` of the prefill backlog limit applies.
  // `exclude`: a backend not to pick (kNil: none). `pass`: which slots count.
  // `scan`: filled for route() when given.
  uint32_t pick_backend(const Pool& pool, TimePoint now, double fraction, uint32_t exclude = detail::kNil,
                        SlotPass pass = SlotPass::kLimit, BackendScan* scan = nullptr) const;
  // The backend for request `n` (kNil: none) and why: prefix affinity
  // within bounded loads when the pool has it and the request has prefix
  // blocks, else pick_backend. `least`: pick_backend(pool, now, fraction)
  // when the caller has it already, else kNil; `scan`: what that pick saw
  // (the same fraction and pass, the backends unchanged since), or null.
  struct Routed {
    uint32_t backend;
    Placement placement = Placement::kLeastLoaded;
    uint16_t prefix_blocks = 0;
  };
  Routed route(const Pool& pool, const Node& n, TimePoint now, double fraction, uint32_t least,
               SlotPass pass = SlotPass::kLimit, const BackendScan* scan = nullptr) const;
  // Bounded loads (affinity_load_slack): the most slots in use, the request's
  // included, per slot that an affinity choice may leave on a backend.
  // `load`: BackendScan::load, when a scan has it.
  double affinity_bound(const Pool& pool, const Node& n, SlotPass pass) const;
  double affinity_bound(const Pool& pool, const Node& n, SlotPass pass, uint64_t load) const;
  // LoRA (scheduler_lora.cpp): route() for a request with an adapter. Only
  // backends serving it; by lora_affinity, first one that has it loaded
  // within the affinity bound, then one with a free adapter slot; otherwise
  // it waits here (kNil) until it is urgent, then the least loaded (its
  // engine queues it for a slot and drains one). kNil when none is open.
  Routed route_lora(const Pool& pool, const Node& n, TimePoint now, double fraction, SlotPass pass,
                    bool avoid) const;
  static bool serves(const detail::Backend& b, uint16_t adapter);
  // A LoRA request that may now wait in an engine for an adapter slot: in its class's aging lead.
  bool lora_urgent(const Node& n, TimePoint now) const;
  // The tenant queue's head is a LoRA request that found no backend: the
  // first of the queue's next requests (in heap order, a bounded look) that
  // does, and where; {kNil, kNil} when none.
  std::pair<uint32_t, Routed> lora_alternative(const Pool& pool, uint32_t tq, uint32_t head, TimePoint now,
                                               double fraction, uint32_t least, SlotPass pass) const;
  // Its slot on b's engine, as vLLM's LRU fills them; n.lora_swap when the engine must free one first.
  void lora_started(detail::Backend& b, Node& n, Placement placement);
  // n leaves b (finished, failed, preempted) or had its first token: no longer a pending swap.
  static void lora_swapped(detail::Backend& b, Node& n);
  static void lora_released(detail::Backend& b, Node& n);
  // Slots in use here, or what the engine reports running (other gateway
  // replicas' requests too), whichever is larger: what bounded loads count.
  // Inline: every backend scan of a routed decision sums it.
  static uint32_t affinity_load(const detail::Backend& b) {
    return std::max(b.in_flight, b.signal.stale ? 0u : b.signal.engine_running);
  }
  // Prefix cache credit (SchedulerConfig::affinity_cache_credit;
  // scheduler_cache_credit.cpp).
  uint16_t cached_blocks(const Pool& pool, uint32_t backend, const Node& n) const;
  static double uncached_prompt(const Node& n);
  bool holder_despite_signal(const detail::Backend& b, TimePoint now, double fraction, SlotPass pass) const;
  // Room for one more: signal, the slots `pass` may fill, `fraction` of the
  // backlog limit.
  static bool open_to(const detail::Backend& b, TimePoint now, double fraction, SlotPass pass = SlotPass::kLimit);
  // A backend's prefill backlog (tokens) at `now`, drained at the pool's rate.
  static bool signal_allows(const detail::Backend& b);  // not down, not saturated (unless stale)
  // Prompts dispatched and not yet prefilled, drained at the backend's rate.
  static double drained_backlog(const detail::Backend& b, TimePoint now);
  static double backlog(const detail::Backend& b, TimePoint now);
  static bool backlog_full(const detail::Backend& b, TimePoint now, double fraction);
  // When a backend whose prefill backlog is all that keeps queued work
  // waiting can take it; TimePoint::max() when none.
  TimePoint backlog_opens(const Pool& pool) const;
  // kNil when nothing may start; `top`: top_priority() of the pool (hybrid).
  uint32_t pick_request(uint32_t pool, TimePoint now, int top);
  uint32_t pick_hybrid(uint32_t pool, TimePoint now, int top);
  // SLO rescue: the class whose oldest request is most urgently at risk of
  // missing its ttft_slo and can still make it; kNil when none.
  template <class InTier>
  uint32_t pick_rescue(uint32_t pool, TimePoint now, const InTier& in_tier);
  // In the last slo_lead_fraction of its ttft_slo, its prefill still fitting.
  bool slo_at_risk(const Node& n, TimePoint now) const;
  // Guarantees, aging, weighted share among the classes `in_tier(c)` accepts.
  template <class InTier>
  uint32_t pick_in_tier(uint32_t pool, TimePoint now, const InTier& in_tier);
  uint32_t pick_leftover(uint32_t pool, TimePoint now);  // borrowing, then background
  // The request the class serves next: arrival order, or fair queueing for a tenant over its share.
  uint32_t head_of_class(uint32_t pool, uint32_t klass, TimePoint now);
  // The tenant queue was served more than kOveruse times its share lately
  // (among tenants with ready work).
  bool overusing(uint32_t tq, TimePoint now) const;
  // More than kFlooding times its share among tenants with work queued or running.
  bool flooding(uint32_t tq, TimePoint now) const;
  // The class's tenant queue with the least virtual time that does not flood.
  uint32_t fairest_not_flooding(const ClassQueue& cq, TimePoint now) const;
  // A class of a worse engine_priority than one whose tenants hold excess
  // slots (Node::excess_slot) in the pool: those count against its limit.
  bool behind_excess(const Pool& pool, uint32_t klass) const;
  // `n` may not start: its tenant floods and the pool is down to its tenant_headroom.
  bool keeps_tenant_headroom(const Pool& pool, const Node& n, TimePoint now) const;
  // Per-tenant caps (tenant_max_running, tenant_max_share): slots held per
  // (pool, tenant), counted only for tenants with a cap.
  bool has_tenant_cap(TenantId tenant) const;
  bool at_tenant_cap(uint32_t pool, TenantId tenant) const;
  // Tenant queue `tq` may start nothing more now: its tenant is at a cap of
  // its own (at_tenant_cap) or at its fair-share cap in the class (tenant_fair_cap).
  bool tenant_capped(uint32_t tq) const;
  void count_running(uint32_t pool, TenantId tenant, int32_t slots);  // + started, - released
  // Takes a tenant queue at its cap out of its class's order until the end
  // of the poll (its heap key sinks), so the class serves its other tenants.
  void defer_tenant(uint32_t tq);
  void restore_deferred();
  // Every tenant with ready work in the class is deferred: those over their
  // fair-share cap (not at a cap of their own) return to its order, and
  // this poll starts their requests as excess (Node::excess_slot).
  void open_excess(uint32_t pool, uint32_t klass);
  static bool deferred_top(const ClassQueue& cq);  // every tenant with ready work is deferred
  static bool has_ready(const Pool& pool);          // a class of the pool has dispatchable work
  // Ready requests of the class's tenants at a cap of their own
  // (at_tenant_cap): they could not use a freed slot.
  uint32_t capped_ready(const ClassQueue& cq) const;
  bool live(uint32_t tq) const;  // a tenant-queue slab index in use
  int top_priority(const Pool& pool) const;  // best engine_priority of non-background classes in use
  bool top_has_ready(const Pool& pool, int top) const;  // a class of priority `top` has work that may start
  int64_t cap_room(const Pool& pool, uint32_t klass) const;  // slots left under max_share
  bool capped(const Pool& pool, uint32_t klass) const;       // at max_share
  bool closed(const Pool& pool, uint32_t klass) const;       // capped, tenant_held or deferred_top this poll
  // Starts a ready request on `backend` of `run_pool` (its own pool, or a lender).
  // `excess`: over its tenant's fair-share cap (Node::excess_slot).
  void start(uint32_t id, uint32_t run_pool, Routed where, TimePoint now, Actions& out, bool excess = false);
  // `n` may borrow now: the lender can take it back, or its TTFT SLO is at risk.
  bool may_borrow(const Node& n, TimePoint now) const;
  // `n` was resumed after a preemption less than preempt_guard ago: no victim yet.
  bool guarded(const Node& n, TimePoint now) const;
  TimePoint guard_end(const Node& n) const;  // when its guard ends
  // A lender's backend takes `n` only if its prompt fits in the lower tier's backlog.
  static bool fits_loan(const detail::Backend& b, const Node& n, TimePoint now);
  // A pool among `pool`'s lenders that lends now (see PoolSpec::lenders), kNil
  // if none; `least`: that lender's least loaded backend open to borrowed work.
  uint32_t lender_with_room(uint32_t pool, TimePoint now, uint32_t& least) const;
  void preempt_pool(uint32_t pool, TimePoint now, Actions& out);
  // Preempts borrowed work on `pool`'s backends for its own waiting work.
  void reclaim_lent(uint32_t pool, TimePoint now, Actions& out);
  void preempt(uint32_t victim, Actions& out);  // chooses it as a victim: kPreempting
  // When the class's waiting work may cause a preemption (preempt_after).
  TimePoint preemption_due(const ClassQueue& cq, uint32_t klass) const;
  // `others`: preemptible work of other classes may be taken when no background is.
  // `guard_ends`: lowered to the end of the guard of each victim passed over for it.
  uint32_t pick_victim(const Pool& pool, TimePoint now, bool others, TimePoint& guard_ends) const;
  // From a victim list's tail back: the newest request whose backend could
  // reuse its slot (not saturated, not down) and that was not preempted
  // within preempt_guard (whose guard end lowers `guard_ends`); kNil if none
  // (bounded walk).
  uint32_t newest_useful_victim(const Pool& pool, uint32_t tail, TimePoint now, TimePoint& guard_ends) const;

  SchedulerConfig config_;                // validated; only tenant_weights ever changes
  std::vector<Node> nodes_;               // request slab
  uint32_t free_nodes_ = detail::kNil;    // free-list head (linked through Node::next)
  std::vector<TenantQueue> tenants_;      // tenant-queue slab
  uint32_t free_tenants_ = detail::kNil;  // free-list head
  FlatIndex tenant_index_;                // (pool, class, tenant) -> tenant-queue slab index
  // The last set_remote_service's rates by (pool, class, tenant), so a
  // tenant queue made before the next exchange starts with its rate.
  FlatIndex remote_index_;                // -> index into remote_rates_
  std::vector<double> remote_rates_;
  double remote_seconds_ = 0;             // the interval they were over
  FlatIndex tenant_running_;              // (pool, tenant) -> slots held, tenants with a cap only
  std::vector<uint32_t> deferred_;        // tenant queues deferred this poll (defer_tenant)
  KeyRhythms rhythms_;                    // adaptive debounce: per supersede key
  std::unordered_map<std::string, uint32_t> keys_;  // tenant-scoped supersede key -> newest node
  std::vector<Pool> pools_;                         // indexed by PoolId
  IndexedHeap<OrderKey> expiry_;          // queued requests with their own deadline, by it
  IndexedHeap<OrderKey> held_;            // debounced requests by end of debounce
  std::vector<uint32_t> priority_order_;  // ClassIds by (engine_priority, index)
  std::vector<Duration> aging_lead_;      // per class: aging_fraction * max_queue_wait
  std::vector<Duration> slo_lead_;        // per class: slo_lead_fraction * ttft_slo
  uint64_t next_seq_ = 1;                 // arrival counter
  uint64_t next_start_seq_ = 1;           // dispatch counter
  uint64_t next_share_seq_ = 1;           // tenant activation counter
  std::size_t queued_ = 0;                // requests held or queued
  std::size_t in_flight_ = 0;             // requests holding a slot
  Counters counters_;                     // metrics
  TimePoint last_poll_{};                 // `now` of the last poll: next_wakeup() asks only for later times
  uint64_t polls_ = 0;                    // polls so far (ClassQueue::excess_open)
};

}  // namespace arbiter::sched
