// Property tests: long random sequences of arrivals, cancels, supersedes
// (keystroke bursts), completions, preemptions and backend signal changes,
// run in virtual time against simulated pools, with fixed seeds.
//
// Checked on every step:
//  - nothing is dispatched after it was cancelled, superseded or expired;
//  - nothing is dispatched at or after its deadline, and every expiry
//    happens exactly at the deadline (the loop wakes at next_wakeup());
//  - work conservation: after poll(), no backend has room while a class
//    that may use it (not at its max_share cap) has dispatchable work;
//  - no backend holds more than its max_concurrency;
//  - with lending (each pool lends to the other): a request runs on its own
//    pool or its lender; borrowed work is preempted only for the lender's
//    own waiting work, and no pool leaves ready work waiting while its
//    lender, with nothing of its own to dispatch, has room.
// Checked over the run (hybrid): min_share honoured within 2 percentage
// points. Measure: pool 0's capacity-time is cut into 1 s windows; a window
// counts for a class when the class had dispatchable queued work during the
// whole window; the class's share of the window is the time integral of its
// slots in flight divided by capacity * 1 s. Every counting window must have
// share >= min_share - 0.02 (and the same run without guarantees must show
// windows below that, so the check can fail).
// Checked at the end, after the load stops and everything drains: every
// gauge, reservation and tenant queue is back to exactly zero, and every
// admitted request ended exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "core/scheduler.hpp"

namespace arbiter::sched::scheduler_property_test {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::duration<double, std::milli>;

constexpr ClassId kRealtime = 0;
constexpr ClassId kCompletion = 1;
constexpr ClassId kStandard = 2;
constexpr ClassId kBatch = 3;
constexpr ClassId kBackground = 4;
constexpr Duration kAbortLatency = 1ms;  // network layer: abort upstream, then report
constexpr Duration kWindow = 1s;

SchedulerConfig sim_config(Policy policy, double realtime_min_share, bool lending = false) {
  SchedulerConfig config;
  config.policy = policy;
  ClassPolicy realtime{.name = "realtime",
                       .min_share = realtime_min_share,
                       .weight = 0.2,  // small: only the guarantee keeps it at 15%
                       .max_queue_wait = 2s,
                       .max_queue = 300,
                       .max_queue_per_tenant = 100};
  ClassPolicy completion{
      .name = "completion", .max_share = 0.3, .max_queue_wait = 1s, .debounce = 30ms};
  ClassPolicy standard{.name = "standard",
                       .min_share = 0.3,
                       .max_share = 0.7,
                       .weight = 2,
                       .max_queue_wait = 10s,
                       .preemptible = true,
                       .max_queue = 400,
                       .max_queue_per_tenant = 100};
  ClassPolicy batch{.name = "batch", .max_queue_wait = 60s, .preemptible = true};
  ClassPolicy background{.name = "background",
                         .max_queue_wait = 600s,
                         .preemptible = true,
                         .background = true,
                         .engine_priority = 10};
  // One priority for the interactive classes: min_share is guaranteed against
  // classes of the same or a lower priority, and this checks the guarantees
  // (the top-priority-first rule has its own tests in scheduler_order_test).
  realtime.engine_priority = 0;
  completion.engine_priority = 0;
  config.classes = {realtime, completion, standard, batch, background};
  config.pools = {PoolSpec{.name = "chat", .max_concurrency = {16, 16}, .prefill_tokens_per_s = {}},
                  PoolSpec{.name = "small", .max_concurrency = {2, 2}, .prefill_tokens_per_s = {}}};
  if (lending) {
    config.pools[0].lenders = {1};
    config.pools[1].lenders = {0};
    // Completions may borrow once half of this is gone (SLO rescue).
    config.classes[kCompletion].ttft_slo = 300ms;
  }
  config.tenant_weights = {{1, 2.0}, {2, 3.0}};
  return config;
}

enum class SimState { kQueued, kRunning, kPreempting, kAborting, kDone };

struct SimRequest {
  Handle handle;                       // scheduler handle
  PoolId pool = 0;                     // pool
  PoolId run_pool = 0;                 // pool of the backend it runs on (a lender's if borrowed)
  ClassId klass = 0;                   // class
  int64_t cost = 0;                    // estimated tokens now (reduced after preemption)
  TimePoint deadline{};                // arrival + class max_queue_wait
  Duration service_left{};             // engine time still needed
  TimePoint run_started{};             // start of the current run
  SimState state = SimState::kQueued;  // what the simulated network layer believes
  uint64_t token = 0;                  // invalidates scheduled completion/abort events
  bool resumed = false;                // preempted at least once: never expires
  TimePoint requeued_at{};             // last requeue after a preemption
};

enum class EventKind { kArrive, kComplete, kAbortDone, kCancel, kSignal, kHeal };

struct Event {
  TimePoint at;    // when
  uint64_t seq;    // tie-break: insertion order
  EventKind kind;  // what
  uint64_t user;   // request index (or backend for kSignal)
  uint64_t token;  // must match the request's token (kComplete, kAbortDone)
  friend bool operator>(const Event& a, const Event& b) {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
};

// A planned arrival.
struct Arrival {
  TimePoint at;                       // arrival time
  PoolId pool;                        // pool
  ClassId klass;                      // class
  TenantId tenant;                    // tenant
  int64_t cost;                       // estimated tokens
  Duration service;                   // engine time needed
  std::string key;                    // supersede key (completion bursts)
  std::optional<TimePoint> deadline;  // the client's own deadline, for some
};

struct ShareWindow {
  double demand_s = 0;      // seconds with dispatchable queued work
  double slot_s = 0;        // integral of slots in flight, slot-seconds
  bool guard_held = false;  // the thrash guard kept a victim the class's guarantee wanted
  bool recent = false;      // its demand began less than preempt_after before the window
};

struct SimResult {
  std::vector<std::vector<ShareWindow>> windows;  // [class][window index], pool 0
  uint64_t dispatches = 0;                        // seen by the simulated network layer
  uint64_t expiries = 0;                          // 503s at the deadline
  uint64_t no_backend = 0;                        // 503s at once: every backend of the pool down
  uint64_t preemptions = 0;                       // victims aborted
  uint64_t rejections = 0;                        // 429s
  uint64_t borrowed = 0;                          // dispatches onto a lender's backend
  uint64_t reclaimed = 0;                         // borrowed work preempted for its lender
  uint64_t events = 0;                            // events processed
  uint64_t tenant_capped = 0;                     // invariant checks finding a class waiting at a tenant cap
  uint32_t over_fair_share_peak = 0;              // most slots a backend ran for tenants over their fair-share cap
};

class Simulation {
 public:
  // `steady_load`: scale of pool 0's standard, batch and background rates
  // (below 1 it has idle capacity between realtime bursts).
  Simulation(SchedulerConfig config, uint32_t seed, Duration load, double steady_load = 1)
      : scheduler_(*Scheduler::create(std::move(config))),
        rng_(seed),
        load_end_(TimePoint(load)),
        steady_load_(steady_load) {
    result_.windows.resize(scheduler_.config().classes.size());
    demand_since_.resize(scheduler_.config().classes.size());
    plan_arrivals();
  }

  // Runs until everything drained, then checks the end state.
  SimResult run() {
    loop();
    if (!::testing::Test::HasFatalFailure()) check_drained();
    return result_;
  }

 private:
  // The event loop; a fatal failure (stall, broken invariant) ends it.
  void loop() {
    TimePoint now{};
    int stalled = 0;  // wake-ups at the same time with nothing to do
    for (;;) {
      const std::optional<TimePoint> wake = scheduler_.next_wakeup();
      if (events_.empty() && !wake) break;
      TimePoint next = events_.empty() ? *wake : events_.top().at;
      if (wake) next = std::min(next, *wake);
      ASSERT_GE(next, now);
      measure(now, next);
      const bool moved = next != now;
      now = next;
      bool handled = false;
      while (!events_.empty() && events_.top().at == now) {
        const Event e = events_.top();
        events_.pop();
        handle(e, now);
        handled = true;
        ++result_.events;
      }
      // A wake-up time that poll() does not act on would spin forever.
      stalled = moved || handled ? 0 : stalled + 1;
      ASSERT_LT(stalled, 3) << "next_wakeup() is not acted on by poll()";
      actions_.clear();
      scheduler_.poll(now, actions_);
      note_guard_held(now);
      act(now);
      check_invariants(now);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  Duration seconds(double s) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
  }

  void push(TimePoint at, EventKind kind, uint64_t user, uint64_t token = 0) {
    events_.push({at, next_event_seq_++, kind, user, token});
  }

  // Poisson arrivals of one class into one pool over [from, to).
  void poisson(PoolId pool, ClassId klass, double per_second, double from_s, double to_s,
               double cost_lo, double cost_hi, double ms_per_token, uint32_t tenants) {
    std::exponential_distribution<double> gap(per_second);
    for (double t = from_s + gap(rng_); t < to_s; t += gap(rng_)) {
      // Tenant 0 sends half of everything: the flooding neighbour.
      const auto tenant = rng_() % 2 == 0 ? 0u : static_cast<TenantId>(rng_() % tenants);
      const auto cost = static_cast<int64_t>(uniform(cost_lo, cost_hi));
      const Duration service = seconds(cost * ms_per_token / 1000 * uniform(0.5, 1.5)) + 1ms;
      // One in ten brings a deadline of its own, which may be the tighter one.
      std::optional<TimePoint> deadline;
      if (rng_() % 10 == 0) deadline = TimePoint(seconds(t + uniform(0.2, 8)));
      arrivals_.push_back(
          {TimePoint(seconds(t)), pool, klass, tenant, cost, service, {}, deadline});
    }
  }

  void plan_arrivals() {
    const double end = std::chrono::duration<double>(load_end_.time_since_epoch()).count();
    // Realtime comes in bursts: on 2-5 s at 60/s (about 18 slots of demand,
    // above its 5-slot guarantee), off 1-4 s.
    for (double t = 0; t < end;) {
      const double on = uniform(2, 5);
      poisson(0, kRealtime, 60, t, std::min(t + on, end), 200, 1000, 0.5, 8);
      t += on + uniform(1, 4);
    }
    poisson(0, kStandard, 40 * steady_load_, 0, end, 1000, 8000, 0.1, 16);
    poisson(0, kBatch, 8 * steady_load_, 0, end, 2000, 8000, 0.4, 8);
    poisson(0, kBackground, 4 * steady_load_, 0, end, 2000, 8000, 0.5, 4);
    poisson(1, kStandard, 10, 0, end, 500, 2000, 0.2, 4);
    poisson(1, kBatch, 2, 0, end, 1000, 4000, 0.4, 4);
    // Completion: 12 typists, bursts of 1-6 keystrokes 5-60 ms apart (the
    // debounce is 30 ms, so some bursts collapse and some supersede a
    // running request), a burst every 0.5-3 s.
    for (uint32_t typist = 0; typist < 12; ++typist) {
      for (double t = uniform(0, 1); t < end; t += uniform(0.5, 3)) {
        const int keys = 1 + static_cast<int>(rng_() % 6);
        double k = t;
        for (int i = 0; i < keys && k < end; ++i, k += uniform(0.005, 0.06)) {
          const auto cost = static_cast<int64_t>(uniform(800, 1200)) + 128;
          arrivals_.push_back({TimePoint(seconds(k)), 0, kCompletion, typist % 8, cost,
                               seconds(cost * 0.08 / 1000 * uniform(0.5, 1.5)) + 1ms,
                               "typist-" + std::to_string(typist), std::nullopt});
        }
      }
    }
    std::sort(arrivals_.begin(), arrivals_.end(),
              [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
    requests_.resize(arrivals_.size());
    for (uint64_t i = 0; i < arrivals_.size(); ++i) {
      push(arrivals_[i].at, EventKind::kArrive, i);
      if (rng_() % 20 == 0) push(arrivals_[i].at + seconds(uniform(0, 4)), EventKind::kCancel, i);
    }
    // Pool 1's backends flap: saturated, stale, down, healthy.
    for (double t = 0.25; t < end; t += uniform(0.1, 0.6)) {
      push(TimePoint(seconds(t)), EventKind::kSignal, rng_() % 2);
    }
    // Pool 0 only flips "stale" (with "saturated" set, which stale must
    // override), so its capacity stays 32 for the share measure.
    for (double t = 0.5; t < end; t += uniform(0.2, 1.0)) {
      push(TimePoint(seconds(t)), EventKind::kSignal, 2 + rng_() % 2);
    }
    // When the load stops every backend recovers, so that requests that no
    // longer expire (resumed ones) can drain.
    push(load_end_, EventKind::kHeal, 0);
  }

  void handle(const Event& e, TimePoint now) {
    switch (e.kind) {
      case EventKind::kArrive:
        return arrive(e.user, now);
      case EventKind::kComplete: {
        SimRequest& r = requests_[e.user];
        if (r.state != SimState::kRunning || r.token != e.token) return;
        std::optional<int64_t> actual;
        if (rng_() % 2 == 0) actual = static_cast<int64_t>(r.cost * uniform(0.3, 1.0));
        EXPECT_TRUE(scheduler_.complete(r.handle, now, actual));
        r.state = SimState::kDone;
        return;
      }
      case EventKind::kAbortDone: {
        SimRequest& r = requests_[e.user];
        if (r.token != e.token) return;
        if (r.state == SimState::kPreempting) {
          r.service_left -= now - kAbortLatency - r.run_started;
          if (r.service_left < 1ms) r.service_left = 1ms;
          // Generated tokens are kept; the continuation costs the rest.
          r.cost = std::max<int64_t>(1, r.cost * 2 / 3);
          EXPECT_TRUE(scheduler_.requeue_preempted(r.handle, r.cost, now));
          r.state = SimState::kQueued;
          r.resumed = true;
          r.requeued_at = now;
          resumed_queued_.push_back(e.user);
        } else if (r.state == SimState::kAborting) {
          EXPECT_TRUE(scheduler_.complete(r.handle, now));
          r.state = SimState::kDone;
        }
        return;
      }
      case EventKind::kCancel: {
        SimRequest& r = requests_[e.user];
        if (r.handle.value == 0) return;  // rejected at arrival
        const CancelOutcome outcome = scheduler_.cancel(r.handle);
        switch (r.state) {
          case SimState::kQueued:
            EXPECT_EQ(outcome, CancelOutcome::kDequeued);
            break;
          case SimState::kDone:
            EXPECT_EQ(outcome, CancelOutcome::kUnknown);
            break;
          default:
            EXPECT_EQ(outcome, CancelOutcome::kReleased);
            break;
        }
        r.state = SimState::kDone;
        ++r.token;
        return;
      }
      case EventKind::kSignal: {
        const PoolId pool = e.user < 2 ? 1 : 0;
        const auto backend = static_cast<BackendId>(e.user % 2);
        BackendSignal signal;
        if (pool == 1) {
          const auto pick = rng_() % 4;
          signal = {.saturated = pick == 0, .stale = pick == 1, .down = pick == 2};
        } else {
          signal = {.saturated = true, .stale = rng_() % 2 == 0, .down = false};
          if (!signal.stale) signal.saturated = false;
        }
        signals_[pool][backend] = signal;
        scheduler_.set_backend_state(pool, backend, signal);
        return;
      }
      case EventKind::kHeal:
        for (PoolId p = 0; p < 2; ++p) {
          for (BackendId b = 0; b < 2; ++b) {
            signals_[p][b] = {};
            scheduler_.set_backend_state(p, b, {});
          }
        }
        return;
    }
  }

  void arrive(uint64_t user, TimePoint now) {
    const Arrival& a = arrivals_[user];
    SimRequest& r = requests_[user];
    auto admitted = scheduler_.enqueue(Request{.user = user,
                                               .pool = a.pool,
                                               .klass = a.klass,
                                               .tenant = a.tenant,
                                               .cost_tokens = a.cost,
                                               .deadline = a.deadline,
                                               .supersede_key = a.key},
                                       now);
    r.pool = a.pool;
    r.klass = a.klass;
    r.cost = a.cost;
    r.service_left = a.service;
    r.deadline = std::min(now + scheduler_.config().classes[a.klass].max_queue_wait,
                          a.deadline.value_or(TimePoint::max()));
    if (!admitted) {
      if (admitted.error().code == ErrorCode::kBackendsDown) {
        for (const BackendSignal& s : signals_[a.pool]) EXPECT_TRUE(s.down) << "refused 'no backend' with one up";
      } else {
        EXPECT_EQ(admitted.error().status(), 429);
      }
      EXPECT_TRUE(admitted.error().retry_after.has_value());
      r.state = SimState::kDone;
      ++result_.rejections;
      return;
    }
    r.handle = admitted->handle;
    r.state = SimState::kQueued;
    if (!admitted->superseded) return;
    SimRequest& old = requests_[admitted->superseded->user];
    EXPECT_EQ(old.handle, admitted->superseded->handle);
    if (!admitted->superseded->in_flight) {
      EXPECT_EQ(old.state, SimState::kQueued);
      old.state = SimState::kDone;
      return;
    }
    EXPECT_TRUE(old.state == SimState::kRunning || old.state == SimState::kPreempting);
    old.state = SimState::kAborting;
    push(now + kAbortLatency, EventKind::kAbortDone, admitted->superseded->user, ++old.token);
  }

  void act(TimePoint now) {
    for (const Expired& e : actions_.expired) {
      SimRequest& r = requests_[e.user];
      EXPECT_EQ(r.state, SimState::kQueued);
      if (e.no_backend) {
        // Fail-fast: only when every backend of its pool is down.
        for (const BackendSignal& s : signals_[e.pool]) EXPECT_TRUE(s.down) << "answered 'no backend' with one up";
        ++result_.no_backend;
      } else {
        EXPECT_FALSE(r.resumed);
        EXPECT_EQ(now, r.deadline) << "expired late or early";
        ++result_.expiries;
      }
      r.state = SimState::kDone;
    }
    for (const Dispatch& d : actions_.dispatches) {
      SimRequest& r = requests_[d.user];
      EXPECT_EQ(r.state, SimState::kQueued) << "dispatched after it ended";
      if (d.pool != r.pool) {
        const auto& lenders = scheduler_.config().pools[r.pool].lenders;
        EXPECT_NE(std::find(lenders.begin(), lenders.end(), d.pool), lenders.end())
            << "ran on a pool that does not lend to its own";
        ++result_.borrowed;
      }
      r.run_pool = d.pool;
      if (!r.resumed) {
        EXPECT_LT(now, r.deadline) << "dispatched past its deadline";
      }
      EXPECT_EQ(d.preemptions > 0, r.resumed);
      const BackendSignal& signal = signals_[d.pool][d.backend];
      EXPECT_FALSE(signal.down) << "dispatched to a backend that is down";
      EXPECT_TRUE(!signal.saturated || signal.stale) << "dispatched to a saturated backend";
      r.state = SimState::kRunning;
      r.run_started = now;
      push(now + r.service_left, EventKind::kComplete, d.user, ++r.token);
      ++result_.dispatches;
    }
    std::vector<int64_t> preempted_now(scheduler_.config().pools.size(), 0);
    for (const Preemption& p : actions_.preemptions) {
      SimRequest& r = requests_[p.user];
      EXPECT_EQ(r.state, SimState::kRunning);
      EXPECT_EQ(p.pool, r.run_pool);
      // Thrash guard: never preempted again soon after its last resume.
      if (r.resumed) {
        EXPECT_GE(now - r.requeued_at, scheduler_.config().preempt_guard) << "preempted in a loop";
      }
      // Never more victims in one poll than the waiting classes could use.
      EXPECT_LE(++preempted_now[p.pool], usable_need(p.pool)) << "preempted beyond the need";
      // Borrowed work is taken back for any of the lender's waiting work;
      // own background work may be preempted for any waiting class; other
      // preemptible work only for a class below its min_share.
      if (r.run_pool != r.pool) {
        ++result_.reclaimed;
      } else if (!scheduler_.config().classes[p.klass].background) {
        EXPECT_TRUE(below_min_share_and_waiting(p.pool))
            << "preempted without a guarantee at stake: pool " << p.pool << " class " << p.klass
            << " home " << r.pool << " ready " << scheduler_.ready_depth(p.pool, 0) << "/"
            << scheduler_.ready_depth(p.pool, 2) << " own " << own_in_flight(p.pool, 0) << "/"
            << own_in_flight(p.pool, 2) << " cap " << scheduler_.capacity(p.pool);
      }
      r.state = SimState::kPreempting;
      push(now + kAbortLatency, EventKind::kAbortDone, p.user, ++r.token);
      ++result_.preemptions;
    }
  }

  // Slots the waiting non-background classes of `pool` could take: per class
  // its ready requests, up to the room its max_share leaves.
  int64_t usable_need(PoolId pool) const {
    int64_t need = 0;
    const double capacity = scheduler_.capacity(pool);
    for (ClassId c = 0; c < scheduler_.config().classes.size(); ++c) {
      const ClassPolicy& cls = scheduler_.config().classes[c];
      if (cls.background) continue;
      const auto cap = static_cast<int64_t>(std::floor(std::max(1.0, cls.max_share * capacity) + 1e-9));
      const int64_t room = cap - own_in_flight(pool, c);
      need += std::max<int64_t>(0, std::min<int64_t>(scheduler_.ready_depth(pool, c), room));
    }
    return need;
  }

  // Slots a class holds on its own pool's backends: what shares count.
  uint32_t own_in_flight(PoolId pool, ClassId klass) const {
    return scheduler_.class_in_flight(pool, klass) - scheduler_.class_borrowed(pool, klass);
  }

  bool below_min_share_and_waiting(PoolId pool) const {
    for (ClassId c = 0; c < scheduler_.config().classes.size(); ++c) {
      const double guaranteed =
          scheduler_.config().classes[c].min_share * scheduler_.capacity(pool);
      if (scheduler_.ready_depth(pool, c) > 0 && own_in_flight(pool, c) < guaranteed) {
        return true;
      }
    }
    return false;
  }

  // Background work, and a class less urgent than one holding slots over
  // its tenants' fair-share cap, wait for a slot free of everything running.
  bool behind_excess(PoolId pool, ClassId klass) const {
    const auto& classes = scheduler_.config().classes;
    if (classes[klass].background) return true;
    for (ClassId c = 0; c < classes.size(); ++c) {
      if (scheduler_.class_over_fair_share(pool, c) > 0 && classes[c].engine_priority < classes[klass].engine_priority) {
        return true;
      }
    }
    return false;
  }

  bool capped(PoolId pool, ClassId klass) const {
    if (scheduler_.config().policy != Policy::kHybrid) return false;
    return own_in_flight(pool, klass) + 1 >
           scheduler_.config().classes[klass].max_share * scheduler_.capacity(pool) + 1e-9;
  }

  void check_invariants(TimePoint now) {
    const SchedulerConfig& config = scheduler_.config();
    // Only a cap the operator set holds a tenant's work beside an idle slot:
    // one over its fair-share cap takes what nobody else can use.
    const bool hard_caps = !config.tenant_max_running.empty() || !config.tenant_max_share.empty();
    for (PoolId p = 0; p < config.pools.size(); ++p) {
      const bool room = has_room(p);
      const bool limit_room = has_room(p, true);
      for (ClassId c = 0; c < config.classes.size(); ++c) {
        const bool waiting = scheduler_.ready_depth(p, c) > 0 && !capped(p, c);
        const WaitReason reason = scheduler_.waits_for(p, c);
        // With tenant_headroom, a flooding tenant's work may wait beside the
        // slots kept for the others, and with tenant_max_running a capped
        // tenant's beside any (each says so).
        ASSERT_TRUE(!room || !waiting || reason == WaitReason::kTenantHeadroom ||
                    (hard_caps && reason == WaitReason::kTenantCap))
            << "idle slot while class " << c << " of pool " << p << " waits";
        // Slots of the limit that tenants over their fair-share cap do not
        // hold are free for their class and the classes above it: only those
        // tenants' work may wait beside them.
        ASSERT_TRUE(!limit_room || !waiting || behind_excess(p, c) || reason == WaitReason::kTenantHeadroom ||
                    reason == WaitReason::kTenantCap)
            << "a slot of the limit free while class " << c << " of pool " << p << " waits";
        result_.tenant_capped += reason == WaitReason::kTenantCap;
      }
      // A lender with room and nothing of its own to dispatch lends it to
      // work it can take back. (Other work borrows only to save an SLO, as
      // does a request resumed within preempt_guard, which is no victim
      // yet; a pool whose next pick may not borrow stops there: checked
      // only when every waiting request may.)
      bool all_reclaimable = !guarded_queued(p, now);
      for (ClassId c = 0; c < config.classes.size(); ++c) {
        const bool waiting = scheduler_.ready_depth(p, c) > 0 && !capped(p, c);
        all_reclaimable = all_reclaimable && (!waiting || reclaimable(c));
      }
      for (const PoolId lender : config.pools[p].lenders) {
        if (!all_reclaimable || !has_room(lender) || has_ready(lender)) continue;
        for (ClassId c = 0; c < config.classes.size(); ++c) {
          ASSERT_TRUE(scheduler_.ready_depth(p, c) == 0 || capped(p, c))
              << "lender " << lender << " idle while class " << c << " of pool " << p << " waits";
        }
      }
    }
  }

  bool reclaimable(ClassId c) const {
    const SchedulerConfig& config = scheduler_.config();
    return config.policy == Policy::kHybrid && config.preemption &&
           (config.classes[c].preemptible || config.classes[c].background);
  }

  // A backend with a free slot: of everything it runs, or (`of_limit`) of
  // what counts against its limit (tenants' work over their fair-share cap
  // does not).
  bool has_room(PoolId p, bool of_limit = false) {
    bool room = false;
    const SchedulerConfig& config = scheduler_.config();
    for (BackendId b = 0; b < config.pools[p].max_concurrency.size(); ++b) {
      const BackendSignal& s = signals_[p][b];
      const uint32_t in_flight = scheduler_.backend_in_flight(p, b);
      const uint32_t over = scheduler_.backend_over_fair_share(p, b);
      const uint32_t limit = config.pools[p].max_concurrency[b];
      EXPECT_LE(in_flight - over, limit);
      EXPECT_LE(over, limit) << "taken only from slots below the limit";
      result_.over_fair_share_peak = std::max(result_.over_fair_share_peak, over);
      room |= !s.down && (of_limit ? in_flight - over : in_flight) < limit && (!s.saturated || s.stale);
    }
    return room;
  }

  // A request of `p` waits that was resumed less than preempt_guard ago.
  bool guarded_queued(PoolId p, TimePoint now) {
    std::erase_if(resumed_queued_, [&](uint64_t user) {
      const SimRequest& r = requests_[user];
      return r.state != SimState::kQueued || now - r.requeued_at >= scheduler_.config().preempt_guard;
    });
    return std::ranges::any_of(resumed_queued_, [&](uint64_t user) { return requests_[user].pool == p; });
  }

  bool has_ready(PoolId p) const {
    for (ClassId c = 0; c < scheduler_.config().classes.size(); ++c) {
      if (scheduler_.ready_depth(p, c) > 0) return true;
    }
    return false;
  }

  // Marks the window of `now`, for each class of pool 0 below its
  // guarantee with work waiting, if the thrash guard kept a victim.
  void note_guard_held(TimePoint now) {
    const uint64_t held = scheduler_.counters().guard_held[0];
    if (held == guard_held_seen_) return;
    guard_held_seen_ = held;
    const auto window = static_cast<std::size_t>(now.time_since_epoch() / kWindow);
    for (ClassId c = 0; c < result_.windows.size(); ++c) {
      const double guaranteed = scheduler_.config().classes[c].min_share * scheduler_.capacity(0);
      if (scheduler_.ready_depth(0, c) == 0 || own_in_flight(0, c) >= guaranteed) continue;
      auto& windows = result_.windows[c];
      if (windows.size() <= window) windows.resize(window + 1);
      windows[window].guard_held = true;
    }
  }

  // Share accounting for pool 0 over [from, to): state is constant there.
  void measure(TimePoint from, TimePoint to) {
    const double capacity = scheduler_.capacity(0);
    while (from < to) {
      const auto window = static_cast<std::size_t>(from.time_since_epoch() / kWindow);
      const TimePoint window_end = TimePoint((window + 1) * kWindow);
      const TimePoint piece_end = std::min(to, window_end);
      const double dt = std::chrono::duration<double>(piece_end - from).count();
      const TimePoint window_start = TimePoint(window * kWindow);
      for (ClassId c = 0; c < result_.windows.size(); ++c) {
        auto& windows = result_.windows[c];
        if (windows.size() <= window) windows.resize(window + 1);
        if (scheduler_.ready_depth(0, c) > 0) {
          if (!demand_since_[c]) demand_since_[c] = from;
          windows[window].demand_s += dt;
          // The guarantee is owed once the class's work has waited preempt_after.
          if (*demand_since_[c] + scheduler_.config().preempt_after > window_start) windows[window].recent = true;
        } else {
          demand_since_[c].reset();
        }
        windows[window].slot_s += own_in_flight(0, c) * dt / capacity;
      }
      from = piece_end;
    }
  }

  void check_drained() {
    const SchedulerConfig& config = scheduler_.config();
    EXPECT_EQ(scheduler_.queued(), 0u);
    EXPECT_EQ(scheduler_.in_flight(), 0u);
    EXPECT_EQ(scheduler_.tenant_queues(), 0u);
    EXPECT_EQ(scheduler_.supersede_keys(), 0u);
    EXPECT_FALSE(scheduler_.next_wakeup().has_value());
    for (PoolId p = 0; p < config.pools.size(); ++p) {
      for (BackendId b = 0; b < config.pools[p].max_concurrency.size(); ++b) {
        EXPECT_EQ(scheduler_.backend_in_flight(p, b), 0u);
      }
      EXPECT_EQ(scheduler_.lent(p), 0u);
      for (ClassId c = 0; c < config.classes.size(); ++c) {
        EXPECT_EQ(scheduler_.queue_depth(p, c), 0u) << "pool " << p << " class " << c;
        EXPECT_EQ(scheduler_.class_in_flight(p, c), 0u);
        EXPECT_EQ(scheduler_.class_borrowed(p, c), 0u);
        EXPECT_EQ(scheduler_.expected_drain(p, c, TimePoint{}), config.min_retry_after);
      }
    }
    for (const SimRequest& r : requests_) EXPECT_EQ(r.state, SimState::kDone);
    const ClassCounters t = scheduler_.counters().total();
    EXPECT_EQ(t.enqueued, t.completed + t.cancelled_queued + t.cancelled_in_flight +
                              t.superseded_queued + t.superseded_in_flight + t.expired + t.no_backend)
        << "every admitted request ends exactly once";
    EXPECT_EQ(t.enqueued + t.rejected_class_full + t.rejected_tenant_full + t.rejected_predicted +
                  t.rejected_no_backend,
              requests_.size());
    EXPECT_EQ(t.rejected_class_full + t.rejected_tenant_full + t.rejected_predicted + t.rejected_no_backend,
              result_.rejections);
    EXPECT_EQ(t.no_backend, result_.no_backend);
    EXPECT_EQ(t.dispatched, result_.dispatches);
    EXPECT_EQ(t.expired, result_.expiries);
    EXPECT_EQ(t.preempted, result_.preemptions);
    EXPECT_EQ(t.borrowed, result_.borrowed);
    EXPECT_EQ(t.reclaimed, result_.reclaimed);
  }

  Scheduler scheduler_;               // under test
  std::mt19937 rng_;                  // fixed seed
  TimePoint load_end_;                // arrivals stop here
  double steady_load_;                // scale of pool 0's steady classes
  std::vector<Arrival> arrivals_;     // planned, by time
  std::vector<SimRequest> requests_;  // by arrival index (= user tag)
  std::vector<uint64_t> resumed_queued_;  // requeued after a preemption (pruned lazily)
  uint64_t guard_held_seen_ = 0;          // pool 0's guard_held at the last poll
  std::vector<std::optional<TimePoint>> demand_since_;  // by class of pool 0: ready work without a break since
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t next_event_seq_ = 0;       // event tie-break
  BackendSignal signals_[2][2] = {};  // what the scheduler was told
  Actions actions_;                   // reused
  SimResult result_;                  // what happened
};

struct WindowShare {
  double worst = 1;    // lowest share over the windows counted
  int counted = 0;     // windows where the guarantee was owed throughout (below), but for:
  int guard_held = 0;  // those where the thrash guard kept a victim it wanted
};

// The lowest share over windows where the class's guarantee was owed
// throughout: it had work waiting all along, since at least preempt_after
// before the window (before that, only slots that free up on their own go
// to it: a burst that arrives with the class holding nothing climbs to its
// share within that delay). Windows where the thrash guard kept the victim
// the guarantee wanted are counted apart: the guard outranks the guarantee
// (a resumed request is not preempted twice within preempt_guard, and the
// class waits for a slot to free), and nothing bounds the slip there.
WindowShare worst_window_share(const std::vector<ShareWindow>& windows) {
  const double full = std::chrono::duration<double>(kWindow).count();
  WindowShare out;
  for (const ShareWindow& w : windows) {
    if (w.demand_s < full - 1e-9 || w.recent) continue;
    if (w.guard_held) {
      ++out.guard_held;
    } else {
      ++out.counted;
      out.worst = std::min(out.worst, w.slot_s / full);
    }
  }
  return out;
}

// Pool 0's realtime (15%) and standard (30%) guarantees held, within 2
// points, in every window where they were owed, and there were at least
// `windows` such windows for each. Returns the windows counted and those the
// thrash guard held, both classes together.
std::pair<int, int> expect_guarantees(const SimResult& result, int windows) {
  std::pair<int, int> total;
  for (const auto& [klass, share] : {std::pair{kRealtime, 0.15}, std::pair{kStandard, 0.30}}) {
    const WindowShare s = worst_window_share(result.windows[klass]);
    EXPECT_GE(s.counted, windows) << "class " << klass;
    EXPECT_GE(s.worst, share - 0.02) << "class " << klass;
    total.first += s.counted;
    total.second += s.guard_held;
  }
  return total;
}

TEST(SchedulerProperty, HybridHonoursMinShareDeadlinesAndDrainsToZero) {
  for (const uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Simulation sim(sim_config(Policy::kHybrid, 0.15), seed, 240s);
    const SimResult result = sim.run();
    EXPECT_GT(result.events, 40'000u);
    EXPECT_GT(result.preemptions, 0u);
    EXPECT_GT(result.expiries, 0u);
    EXPECT_GT(result.no_backend, 0u) << "pool 1's backends all down at times: fail-fast is exercised";
    EXPECT_GT(result.rejections, 0u);
    expect_guarantees(result, 20);
  }
}

TEST(SchedulerProperty, TenantHeadroomKeepsGuaranteesDeadlinesAndDrainsToZero) {
  // Tenant 0 sends half of every class's requests, so with tenant_headroom
  // it floods and is held back: the invariants above still hold (no slot
  // idle while work waits unless the scheduler says it keeps it for the
  // other tenants, nothing dispatched past its deadline, every request ends
  // exactly once, every count, the busy tenants' weights included, back to
  // zero), and so do the min_share guarantees: a class below its guarantee
  // is not held back for its tenant.
  for (uint32_t seed = 1; seed <= 16; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    SchedulerConfig config = sim_config(Policy::kHybrid, 0.15);
    config.tenant_headroom = 0.125;
    Simulation sim(std::move(config), seed, 120s);
    const SimResult result = sim.run();
    EXPECT_GT(result.events, 20'000u);
    EXPECT_GT(result.expiries, 0u);
    EXPECT_GT(result.preemptions, 0u);
    expect_guarantees(result, 10);
  }
}

TEST(SchedulerProperty, TenantCapsKeepDeadlinesAndDrainToZero) {
  // Tenant 0 (half of all requests) may hold 6 slots per pool and a quarter
  // of its capacity (8 of pool 0's 32, 4 when a backend is down), tenant 2 a
  // tenth (3; in pool 1, 1), tenant 3 one slot: every invariant above holds (no slot idle while work waits unless
  // the scheduler says the waiting work's tenants are at their cap, nothing
  // dispatched past its deadline, every count back to zero). Guarantees are
  // not asserted: a class whose waiting work is all a capped tenant's stays
  // below its min_share by design.
  for (const uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    SchedulerConfig config = sim_config(Policy::kHybrid, 0.15);
    config.tenant_max_running = {{0, 6}, {3, 1}};
    config.tenant_max_share = {{0, 0.25}, {2, 0.1}};
    Simulation sim(std::move(config), seed, 120s);
    const SimResult result = sim.run();
    EXPECT_GT(result.events, 20'000u);
    EXPECT_GT(result.expiries, 0u);
    EXPECT_GT(result.preemptions, 0u);
  }
}

TEST(SchedulerProperty, TenantFairCapKeepsDeadlinesAndDrainsToZero) {
  // Tenant 0 sends half of every class's requests, a flood by demand, so
  // with tenant_fair_cap it holds at most twice its share of the busy
  // tenants' slots of the limit, and takes the rest only when nobody else
  // can: every invariant above holds (no slot idle while work waits, a slot
  // of the limit free only while nobody but the capped tenant waits,
  // nothing dispatched past its deadline, every count back to zero).
  for (const uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    SchedulerConfig config = sim_config(Policy::kHybrid, 0.15);
    config.tenant_fair_cap = 2;
    Simulation sim(std::move(config), seed, 120s);
    const SimResult result = sim.run();
    EXPECT_GT(result.tenant_capped, 0u) << "the cap binds";
    EXPECT_GT(result.over_fair_share_peak, 0u) << "and the flood takes idle slots over it";
    EXPECT_GT(result.events, 20'000u);
    EXPECT_GT(result.expiries, 0u);
    EXPECT_GT(result.preemptions, 0u);
  }
}

TEST(SchedulerProperty, WithoutTheGuaranteeTheShareCheckFails) {
  // Same load, realtime's min_share set to 0: its small weight alone leaves
  // it well below 15% in windows where it has demand, so the measure above
  // does detect a missing guarantee.
  Simulation sim(sim_config(Policy::kHybrid, 0.0), 1, 120s);
  const SimResult result = sim.run();
  const WindowShare realtime = worst_window_share(result.windows[kRealtime]);
  EXPECT_GE(realtime.counted, 20);
  EXPECT_LT(realtime.worst, 0.15 - 0.02);
}

TEST(SchedulerProperty, LendingKeepsGuaranteesDeadlinesAndDrainsToZero) {
  // Each pool lends to the other: pool 1's standard and batch work borrows
  // pool 0's idle slots between realtime bursts and is taken back when a
  // burst comes; pool 0's completions borrow pool 1's. The min_share
  // guarantees of pool 0 still hold, measured on its own classes' slots.
  // Pool 0's steady load is lighter here, so it has slots to lend; with
  // the default preempt_after (1 s) a guarantee then slips within a 1 s
  // window with or without lending (the delay restarts whenever the class
  // is partly served), so this run preempts at once. Windows where the
  // thrash guard kept the victim a guarantee wanted occur (7% of those where
  // a guarantee was owed, in 20 seeds; its class fell to 24% and 13% there,
  // and without the guarded requests' loans refused (may_borrow), 8%).
  int counted = 0, guard_held = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    SchedulerConfig config = sim_config(Policy::kHybrid, 0.15, true);
    config.preempt_after = Duration::zero();
    Simulation sim(std::move(config), seed, 120s, 0.6);
    const SimResult result = sim.run();
    EXPECT_GT(result.borrowed, 20u);
    EXPECT_GT(result.reclaimed, 0u);
    const auto [windows, held] = expect_guarantees(result, 10);
    counted += windows;
    guard_held += held;
  }
  EXPECT_GT(guard_held, 0);
  EXPECT_LE(guard_held * 10, counted + guard_held) << "at most a tenth of the windows";
  for (const Policy policy : {Policy::kFifo, Policy::kPriority}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    // No taking back without preemption: only completions about to miss
    // their SLO borrow, and only when they head pool 0's arrival order.
    Simulation sim(sim_config(policy, 0.15, true), 4, 60s, 0.3);
    const SimResult result = sim.run();
    EXPECT_EQ(result.preemptions, 0u);
  }
}

TEST(SchedulerProperty, FifoAndPriorityKeepDeadlinesAndDrainToZero) {
  for (const Policy policy : {Policy::kFifo, Policy::kPriority}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    Simulation sim(sim_config(policy, 0.15), 4, 120s);
    const SimResult result = sim.run();
    EXPECT_GT(result.events, 20'000u);
    EXPECT_EQ(result.preemptions, 0u);
  }
}

}  // namespace
}  // namespace arbiter::sched::scheduler_property_test
