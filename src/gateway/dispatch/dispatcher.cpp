#include "gateway/dispatch/dispatcher.hpp"

#include <algorithm>

namespace arbiter {

// Per-request state shared between the request coroutine and deliveries.
// Fields below `handle` are touched only on `executor`.
struct Dispatcher::Waiter {
  explicit Waiter(net::any_io_executor ex) : executor(std::move(ex)) {}
  enum class State { kQueued, kRunning, kExpired, kSuperseded, kShutDown, kDropped };

  net::any_io_executor executor;  // the request's
  // The request's id (acquire), read under the mutex by the requests it
  // preempts or supersedes: a view of its RequestContext's, which outlives
  // its entry in waiters_ (the Slot, in the handler's frame, removes it).
  std::string_view request_id;
  // Guarded by the mutex, then read on `executor`: who took its slot when
  // it was last preempted (requeue), and whose running generation it
  // inherited (typing through).
  std::optional<Dispatcher::Taker> preempted_by;
  std::string inherited_id;
  // Cancelled to wake the waiting coroutine. Made only when it has to wait:
  // most requests are dispatched at once.
  std::optional<net::steady_timer> wake;
  sched::Handle handle;           // set once at enqueue (under the lock)
  uint64_t tag = 0;               // key in waiters_
  State state = State::kQueued;
  std::optional<sched::Dispatch> dispatch;  // kRunning
  std::shared_ptr<RunParts> generation;   // kRunning: the parts `dispatch` numbers index
  // Guarded by the dispatcher's mutex: what the scheduler was asked to
  // queue (a reload queues it again in a new scheduler), and where it runs
  // in the current scheduler's numbers (set with `dispatched`).
  sched::Request request;
  sched::PoolId run_pool = 0;
  sched::BackendId run_backend = 0;
  bool orphaned = false;  // guarded: running when a reload removed its backend or class
  std::chrono::milliseconds retry_after{0}; // kExpired
  sched::WaitReason waited_for = sched::WaitReason::kNone;  // kExpired: what it waited for
  bool no_backend = false;                 // kExpired: its pool lost every backend
  bool superseded_in_flight = false;
  bool shut_down_in_flight = false;  // running at the drain deadline (interrupt_running)
  bool preempted = false;  // chosen as a preemption victim in its current run
  bool dispatched = false;  // guarded by the dispatcher's mutex: running, or a dispatch on its way
  // Guarded by the dispatcher's mutex: a newer request with its key replaced
  // it while it ran (superseded, or its slot inherited). Its requeue after
  // a preemption or a failed run is refused as superseded; the
  // superseded_in_flight above is the same news, delivered on `executor`.
  bool superseded = false;
  std::function<void()> interrupt_hook;
  // Typing through: set before enqueue, then read under the mutex by a
  // newer request with the same key.
  std::shared_ptr<TypingOffer> offer;
  // Set at enqueue (on this request's own executor, under the mutex).
  std::shared_ptr<TypingOffer> inherited_from;
  std::optional<TypingOutcome> typing;
};

namespace {
ApiError shutting_down() {
  return {ErrorCode::kShuttingDown, "the gateway is shutting down; retry on another replica", {}, {}};
}
ApiError dropped_by_reload() {
  return {ErrorCode::kNoBackend,
          "the configuration was reloaded and no longer serves this request's model, class or tenant; retry",
          {}, std::chrono::milliseconds(1000)};
}
// Never sent (the client is gone); only logged.
ApiError client_gone_error() { return {ErrorCode::kInternal, "client went away while queued", {}, {}}; }
}  // namespace

Dispatcher::Dispatcher(sched::Scheduler scheduler, std::shared_ptr<RunParts> generation,
                       net::any_io_executor timer_executor)
    : scheduler_(std::move(scheduler)),
      generation_(std::move(generation)),
      timer_executor_(timer_executor),
      timer_(timer_executor) {}

Dispatcher::~Dispatcher() = default;

void Dispatcher::start() { net::co_spawn(timer_executor_, timer_loop(), net::detached); }

void Dispatcher::stop() {
  net::post(timer_executor_, [this] {
    stopped_ = true;
    timer_.cancel();
  });
}

Task<void> Dispatcher::timer_loop() {
  while (!stopped_) {
    std::optional<Clock::time_point> next;
    {
      std::lock_guard lock(mu_);
      next = scheduler_.next_wakeup();
    }
    const auto expiry = next ? *next : Clock::time_point::max();
    timer_.expires_at(expiry);
    armed_for_.store(expiry.time_since_epoch().count(), std::memory_order_relaxed);
    co_await timer_.async_wait(kAsTuple);
    if (stopped_) break;
    Decisions decisions;
    {
      std::lock_guard lock(mu_);
      poll_locked(Clock::now(), decisions);
    }
    deliver(decisions, nullptr);
  }
}

void Dispatcher::rearm_timer(std::optional<Clock::time_point> next) {
  // Only when the scheduler now wants waking earlier than the timer is set
  // for: most events (a dispatch, a completion) change nothing here, and a
  // post per request to the timer's strand would cost more than the check.
  if (!next || next->time_since_epoch().count() >= armed_for_.load(std::memory_order_relaxed)) return;
  net::post(timer_executor_, [this] {
    if (!stopped_) timer_.cancel();  // the loop re-reads next_wakeup()
  });
}

void Dispatcher::poll_locked(Clock::time_point now, Decisions& out) {
  actions_.clear();
  scheduler_.poll(now, actions_);
  out.next_wakeup = scheduler_.next_wakeup();
  auto waiter_of = [&](uint64_t tag) -> std::shared_ptr<Waiter> {
    auto it = waiters_.find(tag);
    return it == waiters_.end() ? nullptr : it->second;
  };
  for (const auto& d : actions_.dispatches) {
    if (auto w = waiter_of(d.user)) {
      w->dispatched = true;
      w->run_pool = d.pool;
      w->run_backend = d.backend;
      out.deliveries.push_back(
          {.kind = Delivery::Kind::kDispatch, .waiter = std::move(w), .dispatch = d, .generation = generation_});
    }
  }
  for (const auto& e : actions_.expired) {
    if (auto w = waiter_of(e.user)) {
      waiters_.erase(e.user);
      out.deliveries.push_back({.kind = Delivery::Kind::kExpire,
                                .waiter = std::move(w),
                                .retry_after = e.retry_after,
                                .waited_for = e.waited_for,
                                .no_backend = e.no_backend});
    }
  }
  for (const auto& p : actions_.preemptions) {
    if (auto w = waiter_of(p.user)) {
      out.deliveries.push_back({.kind = Delivery::Kind::kPreempt, .waiter = std::move(w)});
    }
  }
}

void Dispatcher::collect_superseded_locked(const sched::Superseded& s, Decisions& out) {
  auto it = waiters_.find(s.user);
  if (it == waiters_.end()) return;
  auto w = it->second;
  if (s.in_flight) {
    w->superseded = true;
    out.deliveries.push_back({.kind = Delivery::Kind::kSupersedeRunning, .waiter = std::move(w)});
  } else {
    waiters_.erase(it);
    out.deliveries.push_back({.kind = Delivery::Kind::kSupersedeQueued, .waiter = std::move(w)});
  }
}

bool Dispatcher::inherit_locked(const sched::Superseded& s, Waiter& heir, const sched::Request& request,
                                Clock::time_point now) {
  if (!s.in_flight) return false;
  const auto it = waiters_.find(s.user);
  if (it == waiters_.end()) return false;
  const std::shared_ptr<TypingOffer>& old = it->second->offer;
  if (!old || s.preempting) {
    heir.typing = TypingOutcome::kNotEligible;
    return false;
  }
  heir.typing = old->try_claim(*heir.offer);
  if (heir.typing != TypingOutcome::kHandedOver) return false;
  if (!scheduler_.inherit(heir.handle, s.handle, now)) {
    // Another class shares the key (or does not type through).
    old->unclaim();
    heir.typing = TypingOutcome::kNotEligible;
    return false;
  }
  // The old request is not interrupted: its relay, woken from its wait for
  // the engine's next bytes, hands the stream over. This one runs on its
  // slot from now.
  heir.state = Waiter::State::kRunning;
  heir.dispatched = true;
  heir.run_pool = s.pool;
  heir.run_backend = s.backend;
  heir.generation = generation_;
  heir.dispatch = sched::Dispatch{.handle = heir.handle,
                                  .user = heir.tag,
                                  .pool = s.pool,
                                  .backend = s.backend,
                                  .klass = request.klass,
                                  .queue_wait = sched::Duration::zero(),
                                  .engine_priority = scheduler_.config().classes[request.klass].engine_priority,
                                  .preemptions = 0,
                                  .cost_tokens = request.cost_tokens,
                                  .waited_for = sched::WaitReason::kNone,
                                  .placement = sched::Placement::kInherited};
  heir.inherited_from = old;
  heir.inherited_id = it->second->request_id;
  it->second->superseded = true;
  TypingOffer::wake_running(old);
  return true;
}

void Dispatcher::apply(Delivery& d) {
  using Kind = Delivery::Kind;
  auto& w = *d.waiter;
  switch (d.kind) {
    case Kind::kDispatch:
      w.state = decltype(w.state)::kRunning;
      w.dispatch = d.dispatch;
      w.generation = std::move(d.generation);
      if (w.wake) w.wake->cancel();
      break;
    case Kind::kExpire:
      w.state = decltype(w.state)::kExpired;
      w.retry_after = d.retry_after;
      w.waited_for = d.waited_for;
      w.no_backend = d.no_backend;
      if (w.wake) w.wake->cancel();
      break;
    case Kind::kSupersedeQueued:
      w.state = decltype(w.state)::kSuperseded;
      if (w.wake) w.wake->cancel();
      break;
    case Kind::kSupersedeRunning:
      w.superseded_in_flight = true;
      if (auto hook = std::move(w.interrupt_hook)) hook();
      break;
    case Kind::kPreempt:
      w.preempted = true;
      if (auto hook = std::move(w.interrupt_hook)) hook();
      break;
    case Kind::kShutDownQueued:
      w.state = decltype(w.state)::kShutDown;
      if (w.wake) w.wake->cancel();
      break;
    case Kind::kShutDownRunning:
      w.shut_down_in_flight = true;
      if (auto hook = std::move(w.interrupt_hook)) hook();
      break;
    case Kind::kDropped:
      w.state = decltype(w.state)::kDropped;
      if (w.wake) w.wake->cancel();
      break;
  }
}

void Dispatcher::deliver(Decisions& decisions, const Waiter* self) {
  for (auto& d : decisions.deliveries) {
    if (d.waiter.get() == self) {
      apply(d);  // we are on its executor already
    } else {
      auto executor = d.waiter->executor;  // before `d` moves into the handler
      net::post(executor, [d = std::move(d)]() mutable { apply(d); });
    }
  }
  rearm_timer(decisions.next_wakeup);
}

namespace {

// Entry `i` of one of a CarryMap's tables; none beyond it.
template <class Table>
auto mapped(const Table& table, std::size_t i) -> typename Table::value_type {
  return i < table.size() ? table[i] : std::nullopt;
}

// `request` in the numbers of the config `map` leads to; none when that
// config has no place for it.
std::optional<sched::Request> translated(const CarryMap& map, sched::Request request) {
  const auto pool = mapped(map.pools, request.pool);
  const auto klass = mapped(map.classes, request.klass);
  const auto tenant = mapped(map.tenants, request.tenant);
  const auto adapter = request.adapter == 0 ? std::optional<uint16_t>(0) : mapped(map.adapters, request.adapter);
  if (!pool || !klass || !tenant || !adapter) return std::nullopt;
  request.adapter = *adapter;
  request.pool = *pool;
  request.klass = *klass;
  request.tenant = *tenant;
  return request;
}

}  // namespace

Task<std::expected<Dispatcher::Slot, ApiError>> Dispatcher::acquire(sched::Request request, ResponseSink& conn,
                                                                     uint64_t epoch,
                                                                     std::shared_ptr<TypingOffer> offer,
                                                                     std::string_view request_id) {
  auto w = std::make_shared<Waiter>(co_await net::this_coro::executor);
  w->offer = std::move(offer);
  Decisions decisions;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) {
      ApiError refused = shutting_down();
      co_return std::unexpected(std::move(refused));
    }
    const uint64_t current = epoch_.load(std::memory_order_relaxed);
    if (epoch != current) {
      // Admitted under a config a reload has replaced since: its numbers
      // go through each reload's map in turn (none kept that far back: 503).
      std::optional<sched::Request> moved;
      if (epoch < current && current - epoch <= maps_.size()) {
        moved = request;
        for (std::size_t i = maps_.size() - (current - epoch); moved && i < maps_.size(); ++i) {
          moved = translated(maps_[i], *moved);
        }
      }
      if (!moved) {
        ApiError dropped = dropped_by_reload();
        co_return std::unexpected(std::move(dropped));
      }
      request = *moved;
    }
    w->tag = next_tag_++;
    w->request_id = request_id;
    request.user = w->tag;
    const auto now = Clock::now();
    auto admitted = scheduler_.enqueue(request, now);
    if (!admitted) co_return std::unexpected(admitted.error());
    w->handle = admitted->handle;
    w->request = request;
    waiters_.emplace(w->tag, w);
    if (admitted->superseded && !(w->offer && inherit_locked(*admitted->superseded, *w, request, now))) {
      collect_superseded_locked(*admitted->superseded, decisions);
    }
    poll_locked(now, decisions);
  }
  deliver(decisions, w.get());
  // From here the slot completes whatever happens: for a request that never
  // ran, complete() finds a stale handle and does nothing.
  Slot slot(this, w);
  if (w->state == Waiter::State::kRunning && !conn.client_gone()) co_return std::move(slot);  // no wait
  auto turn = co_await wait_turn(w, conn);
  if (!turn) co_return std::unexpected(std::move(turn.error()));
  co_return std::move(slot);
}

Task<std::expected<void, ApiError>> Dispatcher::wait_turn(std::shared_ptr<Waiter> w, ResponseSink& conn) {
  if (w->state == Waiter::State::kQueued) {
    // Woken by a delivery, or by the client leaving (the abort hook).
    w->wake.emplace(w->executor, net::steady_timer::time_point::max());
    conn.set_abort_hook([w] { w->wake->cancel(); });
    co_await w->wake->async_wait(kAsTuple);
    conn.set_abort_hook(nullptr);
  }
  switch (w->state) {
    case Waiter::State::kRunning:
      if (!conn.client_gone()) {
        std::expected<void, ApiError> dispatched;  // a named local: see the GCC 12 note
        co_return dispatched;
      }
      break;  // the caller's Slot gives the slot straight back
    case Waiter::State::kExpired: {
      ApiError expired = w->no_backend ? sched::no_backend_error(w->retry_after)
                                       : sched::deadline_error(w->retry_after, w->waited_for);
      co_return std::unexpected(std::move(expired));
    }
    case Waiter::State::kSuperseded: {
      ApiError superseded = superseded_error();
      co_return std::unexpected(std::move(superseded));
    }
    case Waiter::State::kShutDown: {
      ApiError refused = shutting_down();
      co_return std::unexpected(std::move(refused));
    }
    case Waiter::State::kDropped: {
      ApiError dropped = dropped_by_reload();
      co_return std::unexpected(std::move(dropped));
    }
    case Waiter::State::kQueued:
      cancel(w);  // still queued: the client went away
      break;
  }
  ApiError gone = client_gone_error();
  co_return std::unexpected(std::move(gone));
}

Task<std::expected<void, ApiError>> Dispatcher::requeue(std::shared_ptr<Waiter> w, int64_t remaining_cost,
                                                         ResponseSink& conn, bool failed) {
  Decisions decisions;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) {
      // Draining: it runs nowhere again; the caller's Slot frees its slot.
      ApiError refused = shutting_down();
      co_return std::unexpected(std::move(refused));
    }
    if (w->orphaned) {
      // A reload removed where it ran: it has no queue to go back to.
      ApiError dropped = dropped_by_reload();
      co_return std::unexpected(std::move(dropped));
    }
    if (w->superseded) {
      // Its run was stopped (preempted) or failed, and meanwhile a newer
      // request took its key: it runs nowhere again.
      ApiError superseded = superseded_error();
      co_return std::unexpected(std::move(superseded));
    }
    w->dispatched = false;
    w->state = Waiter::State::kQueued;
    w->preempted = false;
    w->interrupt_hook = nullptr;
    w->dispatch.reset();
    const auto now = Clock::now();
    const bool requeued = failed ? scheduler_.requeue_failed(w->handle, remaining_cost, now)
                                 : scheduler_.requeue_preempted(w->handle, remaining_cost, now);
    if (!requeued) {
      // Not running, or not a preemption victim (a bug in the caller): nothing to wait for.
      ApiError error{ErrorCode::kInternal, "requeue of a request that was not running or preempted", {}, {}};
      co_return std::unexpected(std::move(error));
    }
    poll_locked(Clock::now(), decisions);
    if (!failed) w->preempted_by = taker_locked(*w, decisions);
  }
  deliver(decisions, w.get());
  co_return co_await wait_turn(std::move(w), conn);
}

std::optional<Dispatcher::Taker> Dispatcher::taker_locked(const Waiter& victim, const Decisions& decisions) const {
  // The victim's slot is free from its requeue on: the poll right after
  // gives it to what the preemption was for. Another event may have taken
  // it first (then none is named).
  for (const Delivery& d : decisions.deliveries) {
    if (d.kind != Delivery::Kind::kDispatch || d.waiter.get() == &victim) continue;
    if (d.dispatch.pool != victim.run_pool || d.dispatch.backend != victim.run_backend) continue;
    const auto& classes = scheduler_.config().classes;
    return Taker{.request_id = std::string(d.waiter->request_id),
                 .klass = d.dispatch.klass < classes.size() ? classes[d.dispatch.klass].name : std::string()};
  }
  return std::nullopt;
}

void Dispatcher::carry_backend_signals_locked(sched::Scheduler& next, const CarryMap& map) const {
  // The backends' signals, where they carry over; added ones down until
  // their engine's first scrape says otherwise.
  std::vector<std::vector<bool>> carried_backend(next.config().pools.size());
  for (std::size_t p = 0; p < carried_backend.size(); ++p) {
    carried_backend[p].resize(next.config().pools[p].max_concurrency.size());
  }
  for (std::size_t p = 0; p < map.backends.size(); ++p) {
    if (!map.pools[p]) continue;
    for (std::size_t b = 0; b < map.backends[p].size(); ++b) {
      if (!map.backends[p][b]) continue;
      next.set_backend_state(*map.pools[p], *map.backends[p][b],
                             scheduler_.backend_signal(static_cast<sched::PoolId>(p), static_cast<sched::BackendId>(b)));
      carried_backend[*map.pools[p]][*map.backends[p][b]] = true;
    }
  }
  for (std::size_t p = 0; map.hold_added_backends && p < carried_backend.size(); ++p) {
    // Only beside a carried backend that is up: a pool of added ones
    // alone would answer 503 until the first scrape.
    bool serving = false;
    for (std::size_t b = 0; b < carried_backend[p].size(); ++b) {
      serving = serving || (carried_backend[p][b] &&
                            !next.backend_signal(static_cast<sched::PoolId>(p), static_cast<sched::BackendId>(b)).down);
    }
    for (std::size_t b = 0; serving && b < carried_backend[p].size(); ++b) {
      if (!carried_backend[p][b]) {
        next.set_backend_state(static_cast<sched::PoolId>(p), static_cast<sched::BackendId>(b), {.down = true});
      }
    }
  }
}

std::pair<uint64_t, CarryReport> Dispatcher::reconfigure(sched::Scheduler next, const CarryMap& map,
                                                          std::shared_ptr<RunParts> generation) {
  CarryReport report;
  Decisions decisions;
  std::shared_ptr<RunParts> previous;  // released after the lock
  uint64_t epoch = 0;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    next.carry_counters(scheduler_.counters(), map.classes, map.pools);
    carry_backend_signals_locked(next, map);
    // In order of arrival (tags grow with it): the tenant queues keep their order.
    std::vector<std::shared_ptr<Waiter>> order;
    order.reserve(waiters_.size());
    for (const auto& [tag, w] : waiters_) order.push_back(w);
    std::ranges::sort(order, {}, [](const auto& w) { return w->tag; });
    for (const auto& w : order) {
      const auto deadline = scheduler_.queue_deadline(w->handle);
      const std::optional<sched::Request> request = translated(map, w->request);
      sched::Scheduler::Carried carried{.deadline = deadline.value_or(Clock::time_point::max())};
      bool placeable = request.has_value();
      if (w->dispatched && !deadline) {
        const auto run_pool = mapped(map.pools, w->run_pool);
        const auto backend = w->run_pool < map.backends.size() ? mapped(map.backends[w->run_pool], w->run_backend)
                                                               : std::nullopt;
        carried.running = true;
        placeable = placeable && run_pool && backend;
        if (placeable) {
          carried.run_pool = *run_pool;
          carried.backend = *backend;
        }
      }
      std::optional<sched::Handle> handle;
      if (placeable) handle = next.carry_over(*request, carried, now);
      if (handle) {
        w->handle = *handle;
        w->request = *request;
        if (carried.running) {
          w->run_pool = carried.run_pool;
          w->run_backend = carried.backend;
          ++report.running;
        } else {
          ++report.queued;
        }
      } else if (carried.running) {
        // Its backend left the config: it finishes where it runs, its
        // slot counted nowhere (its completion finds a stale handle).
        w->handle = sched::Handle{};
        w->orphaned = true;
        ++report.orphaned_running;
      } else {
        waiters_.erase(w->tag);
        decisions.deliveries.push_back({.kind = Delivery::Kind::kDropped, .waiter = w});
        ++report.dropped_queued;
      }
    }
    scheduler_ = std::move(next);
    maps_.push_back(map);
    if (maps_.size() > kKeptMaps) maps_.pop_front();
    previous = std::exchange(generation_, std::move(generation));
    epoch = epoch_.load(std::memory_order_relaxed) + 1;
    epoch_.store(epoch, std::memory_order_release);
    poll_locked(now, decisions);
  }
  deliver(decisions, nullptr);
  return {epoch, report};
}

void Dispatcher::shut_down_queue() {
  Decisions decisions;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->second->dispatched) {
        ++it;
        continue;
      }
      scheduler_.cancel(it->second->handle);
      decisions.deliveries.push_back({.kind = Delivery::Kind::kShutDownQueued, .waiter = it->second});
      it = waiters_.erase(it);
    }
  }
  deliver(decisions, nullptr);
}

void Dispatcher::interrupt_running() {
  Decisions decisions;
  {
    std::lock_guard lock(mu_);
    for (const auto& [tag, w] : waiters_) {
      if (w->dispatched) decisions.deliveries.push_back({.kind = Delivery::Kind::kShutDownRunning, .waiter = w});
    }
  }
  deliver(decisions, nullptr);
}

void Dispatcher::cancel(const std::shared_ptr<Waiter>& w) {
  Decisions decisions;
  {
    std::lock_guard lock(mu_);
    scheduler_.cancel(w->handle);
    waiters_.erase(w->tag);
    poll_locked(Clock::now(), decisions);
  }
  deliver(decisions, nullptr);
}

void Dispatcher::complete(const std::shared_ptr<Waiter>& w, std::optional<int64_t> actual_tokens) {
  Decisions decisions;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    scheduler_.complete(w->handle, now, actual_tokens);
    waiters_.erase(w->tag);
    poll_locked(now, decisions);
  }
  deliver(decisions, nullptr);
}

void Dispatcher::first_token(const std::shared_ptr<Waiter>& w) {
  Decisions decisions;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    if (!scheduler_.first_token(w->handle, now)) return;
    poll_locked(now, decisions);
  }
  deliver(decisions, nullptr);
}

void Dispatcher::set_prefix_cache(uint64_t epoch, sched::PoolId pool, sched::BackendId backend, uint64_t tokens) {
  std::lock_guard lock(mu_);
  if (epoch == epoch_.load(std::memory_order_relaxed)) scheduler_.set_prefix_cache(pool, backend, tokens);
}

void Dispatcher::set_backend_state(uint64_t epoch, sched::PoolId pool, sched::BackendId backend,
                                   sched::BackendSignal signal) {
  Decisions decisions;
  {
    std::lock_guard lock(mu_);
    if (epoch != epoch_.load(std::memory_order_relaxed)) return;
    // A new running count alone starts nothing: no poll for it.
    if (!scheduler_.set_backend_state(pool, backend, signal)) return;
    poll_locked(Clock::now(), decisions);
  }
  deliver(decisions, nullptr);
}

void Dispatcher::set_class_paused(uint64_t epoch, sched::PoolId pool, sched::ClassId klass, bool paused) {
  Decisions decisions;
  {
    std::lock_guard lock(mu_);
    if (epoch != epoch_.load(std::memory_order_relaxed)) return;
    if (!scheduler_.set_class_paused(pool, klass, paused) || paused) return;
    poll_locked(Clock::now(), decisions);
  }
  deliver(decisions, nullptr);
}

Dispatcher::Slot::~Slot() {
  // Without an engine's usage (a plain stream), the charge stays the estimate.
  if (waiter_) dispatcher_->complete(waiter_, actual_tokens_);
}

sched::PoolId Dispatcher::Slot::pool() const { return waiter_->dispatch->pool; }
RunParts& Dispatcher::Slot::generation() const { return *waiter_->generation; }
sched::BackendId Dispatcher::Slot::backend() const { return waiter_->dispatch->backend; }
void Dispatcher::Slot::first_token() {
  if (waiter_) dispatcher_->first_token(waiter_);
}
int Dispatcher::Slot::engine_priority() const { return waiter_->dispatch->engine_priority; }
sched::Duration Dispatcher::Slot::queue_wait() const { return waiter_->dispatch->queue_wait; }
sched::WaitReason Dispatcher::Slot::waited_for() const { return waiter_->dispatch->waited_for; }
void Dispatcher::Slot::set_interrupt_hook(std::function<void()> hook) {
  if (waiter_->superseded_in_flight || waiter_->preempted || waiter_->shut_down_in_flight) {
    if (hook) hook();  // interrupted before the exchange even started
    return;
  }
  waiter_->interrupt_hook = std::move(hook);
}
bool Dispatcher::Slot::preempted() const {
  return waiter_->preempted && !waiter_->superseded_in_flight && !waiter_->shut_down_in_flight;
}
std::optional<ApiError> Dispatcher::Slot::interrupt_error() const {
  if (waiter_->shut_down_in_flight) return shutting_down();
  return std::nullopt;
}
const std::shared_ptr<TypingOffer>& Dispatcher::Slot::inherited_from() const { return waiter_->inherited_from; }
const std::string& Dispatcher::Slot::inherited_id() const { return waiter_->inherited_id; }
const std::optional<Dispatcher::Taker>& Dispatcher::Slot::preempted_by() const { return waiter_->preempted_by; }
sched::Placement Dispatcher::Slot::placement() const { return waiter_->dispatch->placement; }
uint16_t Dispatcher::Slot::prefix_blocks() const { return waiter_->dispatch->prefix_blocks; }
std::optional<TypingOutcome> Dispatcher::Slot::typing_outcome() const { return waiter_->typing; }
Task<std::expected<void, ApiError>> Dispatcher::Slot::requeue(int64_t remaining_cost, ResponseSink& conn) {
  return dispatcher_->requeue(waiter_, remaining_cost, conn, false);
}
Task<std::expected<void, ApiError>> Dispatcher::Slot::retry(int64_t remaining_cost, ResponseSink& conn) {
  return dispatcher_->requeue(waiter_, remaining_cost, conn, true);
}

}  // namespace arbiter
