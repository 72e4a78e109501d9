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

#include "core/error.hpp"
#include "core/scheduler.hpp"
#include "http/asio.hpp"
#include "http/response_sink.hpp"
#include "gateway/relay/typing_handover.hpp"

namespace arbiter {

class Dispatcher {
 private:
  struct Waiter;

 public:
  Dispatcher(sched::Scheduler scheduler, net::any_io_executor timer_executor);
  ~Dispatcher();

  // A granted scheduler slot: the request may run on backend() now. Its
  // destructor tells the scheduler the exchange ended (exactly once).
  class Slot {
   public:
    Slot(Dispatcher* d, std::shared_ptr<Waiter> w) : dispatcher_(d), waiter_(std::move(w)) {}
    Slot(Slot&& o) noexcept = default;
    Slot& operator=(Slot&&) = delete;
    ~Slot();

    // Where it runs: a backend of its own pool, or of a pool lending it a slot.
    sched::PoolId pool() const;
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
  Task<std::expected<Slot, ApiError>> acquire(sched::Request request, ResponseSink& conn,
                                               std::shared_ptr<TypingOffer> offer = nullptr);

  // Latest engine-signal verdict for one backend.
  void set_backend_state(sched::PoolId pool, sched::BackendId backend, sched::BackendSignal signal);
  // Pauses or resumes a class's new dispatch on a pool (staged
  // degradation); a resume polls, so its queued work starts at once.
  void set_class_paused(sched::PoolId pool, sched::ClassId klass, bool paused);
  // The prompt prefix one backend's engine caches, in tokens (its KV size).
  void set_prefix_cache(sched::PoolId pool, sched::BackendId backend, uint64_t tokens);

  // Runs `f(const sched::Scheduler&)` under the lock (metrics scrapes).
  template <class F>
  void inspect(F&& f) const {
    std::lock_guard lock(mu_);
    f(scheduler_);
  }
  // Runs `f(sched::Scheduler&)` under the lock, for changes that dispatch
  // nothing by themselves (the next poll sees them): the other replicas'
  // service (ServiceExchange).
  template <class F>
  void update(F&& f) {
    std::lock_guard lock(mu_);
    f(scheduler_);
  }

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
      kShutDownRunning
    };
    Kind kind;
    std::shared_ptr<Waiter> waiter;
    sched::Dispatch dispatch{};
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

  // Polls the scheduler (lock held) and collects what to deliver.
  void poll_locked(Clock::time_point now, Decisions& out);
  void collect_superseded_locked(const sched::Superseded& s, Decisions& out);
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
  sched::Actions actions_;                                      // scratch; guarded
  net::any_io_executor timer_executor_;                         // a strand
  net::steady_timer timer_;                                     // next deadline/debounce; timer strand
  bool stopped_ = false;                                        // timer strand
  // The timer's expiry (steady_clock ticks), readable from any thread.
  std::atomic<int64_t> armed_for_{std::numeric_limits<int64_t>::max()};
};

}  // namespace arbiter
