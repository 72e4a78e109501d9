// Bridges request coroutines and the scheduler core. The Scheduler lives
// behind one mutex; after every change (enqueue, complete, cancel, a
// backend signal, a timer tick) its decisions are collected under the lock
// and delivered afterwards, each on the executor of the request it concerns:
// a dispatch wakes the waiting coroutine with its backend, an expiry answers
// 503, a supersede drops a queued request or interrupts a running one, a
// preemption interrupts a running one, which then requeues (Slot::requeue)
// and continues from its checkpoint when dispatched again. Draining answers
// the queue 503 shutting_down, and at its deadline interrupts what runs.
//
// Requests queue here, not in the engines (late binding): a request leaves
// its queue only when a backend of its pool has room.
#pragma once

#include <atomic>
#include <deque>
#include <chrono>
#include <limits>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/scheduler.hpp"
#include "http/asio.hpp"
#include "http/response_sink.hpp"
#include "gateway/relay/typing_handover.hpp"

namespace arbiter {

class BackendHealth;
class ModelPool;

// The parts built from one config that run a dispatched request (its
// model pools' connections, its backends' health), which the config's
// Generation (gateway/generation.hpp) provides. A dispatch carries the
// ones current when it was made, so its pool and backend numbers always
// index the config they came from.
class RunParts {
 public:
  virtual ~RunParts() = default;
  virtual const Config& config() const = 0;
  virtual ModelPool& pool(sched::PoolId p) const = 0;
  virtual BackendHealth& health() const = 0;
};

// How a config reload maps the old scheduler's numbers to the new one's
// (none: the new config dropped it). gateway/config_change builds it by name.
struct CarryMap {
  std::vector<std::optional<sched::PoolId>> pools;
  std::vector<std::optional<sched::ClassId>> classes;
  std::vector<std::optional<sched::TenantId>> tenants;  // the anonymous tenant last
  // [old adapter number]: its number in the new config (0 stays 0).
  std::vector<std::optional<uint16_t>> adapters;
  std::vector<std::vector<std::optional<sched::BackendId>>> backends;  // [old pool][old backend]
  // A backend the new config adds to a pool that keeps a live one starts
  // down, to come up at its engine's first good scrape (probed before use);
  // false when nothing would scrape it (engine_signals off).
  bool hold_added_backends = false;
};

// What a reload did to the requests it found.
struct CarryReport {
  std::size_t queued = 0;         // queued again in the new scheduler
  std::size_t running = 0;        // counted on their backend in the new one
  std::size_t dropped_queued = 0;  // answered 503: the new config has no place for them
  std::size_t orphaned_running = 0;  // run to their end uncounted: their backend or class was removed
};

class Dispatcher {
 private:
  struct Waiter;

 public:
  // The request that took a preempted request's slot (the audit trail).
  struct Taker {
    std::string request_id;
    std::string klass;  // its class's name
  };

  // `generation`: the parts its dispatches run on (Slot::generation()).
  Dispatcher(sched::Scheduler scheduler, std::shared_ptr<RunParts> generation,
             net::any_io_executor timer_executor);
  ~Dispatcher();

  // A granted scheduler slot: the request may run on backend() now. Its
  // destructor tells the scheduler the exchange ended (exactly once).
  class Slot {
   public:
    Slot(Dispatcher* d, std::shared_ptr<Waiter> w) : dispatcher_(d), waiter_(std::move(w)) {}
    Slot(Slot&& o) noexcept = default;
    Slot& operator=(Slot&&) = delete;
    ~Slot();

    // Where it runs: a backend of its own pool, or of a pool lending it a slot,
    // numbered in generation()'s config.
    sched::PoolId pool() const;
    // The parts built from the config current at its (latest) dispatch.
    RunParts& generation() const;
    sched::BackendId backend() const;
    int engine_priority() const;
    // Time spent queued, as the scheduler measured it (from enqueue or
    // from the last requeue).
    sched::Duration queue_wait() const;
    // Why its class's work was waiting when it was dispatched (kNone: it was not).
    sched::WaitReason waited_for() const;
    // Runs (on the request's executor) if the scheduler supersedes or
    // preempts this running request; it should abort the upstream exchange
    // at once. Runs at once when that already happened.
    void set_interrupt_hook(std::function<void()> hook);
    // What the request really cost (prompt + generated tokens, from the
    // engine's usage): the scheduler corrects its estimate when the slot ends.
    void set_actual_tokens(int64_t tokens) { actual_tokens_ = tokens; }
    // The engine produced the run's first token: its prompt no longer counts
    // in the backend's prefill backlog, which may let queued work start.
    void first_token();
    // The interrupt was a preemption (not a supersede or the drain deadline): requeue() next.
    bool preempted() const;
    // What the client is told when an interrupt that is no preemption
    // stops the run: shutting_down at the drain deadline; none (superseded).
    std::optional<ApiError> interrupt_error() const;
    // Gives the slot back and queues the request again with `remaining_cost`
    // tokens (first in its tenant queue, never expiring), then waits for its
    // next dispatch, as acquire() does. On success the slot is held again
    // (backend() may differ); on failure (client gone, superseded) it is not.
    Task<std::expected<void, ApiError>> requeue(int64_t remaining_cost, ResponseSink& conn);
    // The run failed (retry before the first byte, or failover of a
    // resumable request): gives the slot back and queues the request again
    // first in its tenant queue, for another backend of its pool when one
    // has room; then as requeue().
    Task<std::expected<void, ApiError>> retry(int64_t remaining_cost, ResponseSink& conn);
    // Typing through: the offer of the running request whose slot this one
    // took over (null: it was dispatched as usual), and what came of trying
    // (none: it superseded no running request, or its class does not type through).
    const std::shared_ptr<TypingOffer>& inherited_from() const;
    std::optional<TypingOutcome> typing_outcome() const;
    // The id of the request whose running generation it inherited (empty: none).
    const std::string& inherited_id() const;
    // After a requeue() that followed a preemption: the request its slot
    // went to at once (none: nothing took it in that poll).
    const std::optional<Taker>& preempted_by() const;
    // Why its latest dispatch went to backend(), and the prompt blocks that
    // backend held (sched::Placement::kPrefixHeld).
    sched::Placement placement() const;
    uint16_t prefix_blocks() const;

   private:
    Dispatcher* dispatcher_;
    std::shared_ptr<Waiter> waiter_;
    std::optional<int64_t> actual_tokens_;  // set_actual_tokens(); none: the estimate stands
  };

  // Queues the request and waits for its turn. Errors: 429 (queue full),
  // 503 (deadline passed), 409 (superseded while queued). When the client
  // goes away while queued the request is dequeued and an error returned
  // too: the caller checks conn.client_gone() and answers nothing.
  // `offer`: the request's typing offer (typing_handover.hpp), when its
  // class types through: a running request with the same supersede key
  // whose offer it may claim hands it its slot and generation instead of
  // being interrupted.
  // `epoch`: the config generation whose numbers `request` uses (its
  // pipeline's); one a reload has since replaced is translated by the
  // reloads' maps (a request admitted just before a reload), or answered
  // 503 when the new config has no place for it.
  // `request_id`: the request's own (the audit trail names it to the
  // requests it preempts or supersedes); it must outlive the Slot.
  Task<std::expected<Slot, ApiError>> acquire(sched::Request request, ResponseSink& conn, uint64_t epoch,
                                               std::shared_ptr<TypingOffer> offer = nullptr,
                                               std::string_view request_id = {});

  // The calls below number pools, classes and backends in one config's
  // terms: `epoch` is that config's (epoch() when it was built). A call of
  // an older epoch (a generation's loop still under way after a reload) is
  // dropped, so it never lands on another backend.
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  // Latest engine-signal verdict for one backend.
  void set_backend_state(uint64_t epoch, sched::PoolId pool, sched::BackendId backend, sched::BackendSignal signal);
  // Pauses or resumes a class's new dispatch on a pool (staged
  // degradation); a resume polls, so its queued work starts at once.
  void set_class_paused(uint64_t epoch, sched::PoolId pool, sched::ClassId klass, bool paused);
  // The prompt prefix one backend's engine caches, in tokens (its KV size).
  void set_prefix_cache(uint64_t epoch, sched::PoolId pool, sched::BackendId backend, uint64_t tokens);

  // Runs `f(const sched::Scheduler&)` under the lock (metrics scrapes);
  // false (not run) for an older epoch.
  template <class F>
  bool inspect(uint64_t epoch, F&& f) const {
    std::lock_guard lock(mu_);
    if (epoch != epoch_.load(std::memory_order_relaxed)) return false;
    f(scheduler_);
    return true;
  }
  // Runs `f(sched::Scheduler&)` under the lock, for changes that dispatch
  // nothing by themselves (the next poll sees them): the other replicas'
  // service (ServiceExchange). Not run for an older epoch.
  template <class F>
  void update(uint64_t epoch, F&& f) {
    std::lock_guard lock(mu_);
    if (epoch == epoch_.load(std::memory_order_relaxed)) f(scheduler_);
  }

  // A config reload: `next` (built from the new config) takes the old
  // scheduler's place, and with it the backends' signals (kept by name;
  // an added backend held down while map.hold_added_backends) and every
  // request: queued ones queue there
  // with their deadlines, in their order of arrival; running ones are
  // counted on their backend there (no overcommit) and finish on the
  // generation they run on. Queued requests the new config has no place
  // for are answered 503 at once, never dropped silently. Dispatches from
  // now on carry `generation`. Returns the new epoch and what was carried.
  std::pair<uint64_t, CarryReport> reconfigure(sched::Scheduler next, const CarryMap& map,
                                               std::shared_ptr<RunParts> generation);

  // Draining starts (SIGTERM): every queued request is answered 503
  // shutting_down (Retry-After) at once, and so is any request enqueued or
  // requeued from now on; running ones continue.
  void shut_down_queue();
  // The drain deadline: every running request is interrupted; the client is
  // told shutting_down (a stream ends with it as its final error event).
  void interrupt_running();

  void start();
  void stop();

 private:
  // One decision to hand to a request.
  struct Delivery {
    enum class Kind {
      kDispatch,
      kExpire,
      kSupersedeQueued,
      kSupersedeRunning,
      kPreempt,
      kShutDownQueued,
      kShutDownRunning,
      kDropped  // queued, and the reloaded config has no place for it
    };
    Kind kind;
    std::shared_ptr<Waiter> waiter;
    sched::Dispatch dispatch{};
    std::shared_ptr<RunParts> generation;  // kDispatch: the parts it runs on
    std::chrono::milliseconds retry_after{0};
    sched::WaitReason waited_for = sched::WaitReason::kNone;  // kExpire
    bool no_backend = false;                                  // kExpire: its pool lost every backend
  };
  using Clock = sched::Clock;
  // What one poll decided, and when the scheduler next wants a poll.
  struct Decisions {
    // Usually one (the dispatch a request or completion caused): no heap.
    boost::container::small_vector<Delivery, 2> deliveries;
    std::optional<Clock::time_point> next_wakeup;
  };

  // reconfigure(): the backends' signals the old scheduler has, into `next`
  // by `map`; added backends held down beside a live one (lock held).
  void carry_backend_signals_locked(sched::Scheduler& next, const CarryMap& map) const;
  // Polls the scheduler (lock held) and collects what to deliver.
  void poll_locked(Clock::time_point now, Decisions& out);
  void collect_superseded_locked(const sched::Superseded& s, Decisions& out);
  // The request a poll after a preemption victim's requeue gave its slot to.
  std::optional<Taker> taker_locked(const Waiter& victim, const Decisions& decisions) const;
  // Typing through: `heir` (just enqueued, with an offer) takes over the
  // superseded running request's slot when its offer's rule holds; false
  // (the outcome noted on `heir`) when the old one is to be interrupted.
  bool inherit_locked(const sched::Superseded& s, Waiter& heir, const sched::Request& request,
                      Clock::time_point now);
  // Delivers outside the lock; `self` (may be null) is the calling
  // request's waiter, handled inline instead of posted.
  void deliver(Decisions& decisions, const Waiter* self);
  // Applies one decision on its request's executor.
  static void apply(Delivery& d);
  // Waits (on the request's executor) until `w` is dispatched, expires, is
  // superseded or its client leaves (then it is dequeued).
  Task<std::expected<void, ApiError>> wait_turn(std::shared_ptr<Waiter> w, ResponseSink& conn);
  // `failed`: Scheduler::requeue_failed, else requeue_preempted.
  Task<std::expected<void, ApiError>> requeue(std::shared_ptr<Waiter> w, int64_t remaining_cost,
                                              ResponseSink& conn, bool failed);
  void complete(const std::shared_ptr<Waiter>& w, std::optional<int64_t> actual_tokens);
  void first_token(const std::shared_ptr<Waiter>& w);  // Slot::first_token
  void cancel(const std::shared_ptr<Waiter>& w);
  // Wakes the timer loop when `next` is earlier than its current expiry.
  void rearm_timer(std::optional<Clock::time_point> next);
  Task<void> timer_loop();

  mutable std::mutex mu_;
  sched::Scheduler scheduler_;                                  // guarded by mu_
  std::unordered_map<uint64_t, std::shared_ptr<Waiter>> waiters_;  // by user tag; guarded
  uint64_t next_tag_ = 1;                                       // guarded
  bool shutting_down_ = false;                                  // guarded: shut_down_queue() was called
  std::shared_ptr<RunParts> generation_;                      // guarded: what new dispatches run on
  std::atomic<uint64_t> epoch_{1};                              // written under mu_: reconfigure()
  // The last reloads' maps, oldest first: maps_[i] took epoch
  // epoch_ - maps_.size() + i to the next. Bounded (kKeptMaps).
  std::deque<CarryMap> maps_;                                   // guarded
  static constexpr std::size_t kKeptMaps = 16;
  sched::Actions actions_;                                      // scratch; guarded
  net::any_io_executor timer_executor_;                         // a strand
  net::steady_timer timer_;                                     // next deadline/debounce; timer strand
  bool stopped_ = false;                                        // timer strand
  // The timer's expiry (steady_clock ticks), readable from any thread.
  std::atomic<int64_t> armed_for_{std::numeric_limits<int64_t>::max()};
};

// One generation's calls into the dispatcher's scheduler, in its config's
// numbers: made with the epoch its config got (Dispatcher::epoch()), so
// once a reload moves the scheduler on, its late calls are dropped.
class SchedulerLink {
 public:
  SchedulerLink(Dispatcher& dispatcher, uint64_t epoch) : dispatcher_(&dispatcher), epoch_(epoch) {}

  void set_backend_state(sched::PoolId pool, sched::BackendId backend, sched::BackendSignal signal) {
    dispatcher_->set_backend_state(epoch_, pool, backend, signal);
  }
  void set_class_paused(sched::PoolId pool, sched::ClassId klass, bool paused) {
    dispatcher_->set_class_paused(epoch_, pool, klass, paused);
  }
  void set_prefix_cache(sched::PoolId pool, sched::BackendId backend, uint64_t tokens) {
    dispatcher_->set_prefix_cache(epoch_, pool, backend, tokens);
  }
  // False (f not run) once the scheduler has moved on to a newer config.
  template <class F>
  bool inspect(F&& f) const {
    return dispatcher_->inspect(epoch_, std::forward<F>(f));
  }
  template <class F>
  void update(F&& f) {
    dispatcher_->update(epoch_, std::forward<F>(f));
  }
  Dispatcher& dispatcher() const { return *dispatcher_; }

 private:
  Dispatcher* dispatcher_;
  uint64_t epoch_;
};

}  // namespace arbiter
