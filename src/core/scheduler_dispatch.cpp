// The decisions: what expires, what starts where, and (hybrid) whom to
// preempt. Each decision looks at C classes and B backends, never at the
// queued requests one by one: O(C + B + log n).
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "core/mix.hpp"
#include "core/prefix_blocks.hpp"
#include "core/scheduler.hpp"
#include "core/scheduler_bound.hpp"

namespace arbiter::sched {

using detail::kNil;
using detail::kNoAvoid;
using detail::kLowerTierBacklog;
using detail::share_deficit;
using detail::ticks;

namespace {

TimePoint from_ticks(int64_t t) { return TimePoint(Duration(t)); }

// Share of a backend's slots that prefix affinity may load it beyond the
// pool's average share in any case, so a quiet pool keeps its affinity
// (see Scheduler::route): 4 of 64 slots.
constexpr double kAffinityMinSlack = 1.0 / 8;

// Expected first-token times (seconds) this close are a tie for affinity
// routing, broken by rendezvous (see Scheduler::route). Without a prefill
// rate the cost is in tokens, where 1e-3 still only equates equal ones.
constexpr double kAffinityTie = 1e-3;

// Highest-random-weight score of a backend for a key.
uint64_t rendezvous(uint64_t key, uint32_t backend) { return mix_bits(key ^ (kGoldenGamma * (backend + 1))); }

}  // namespace

void Scheduler::poll(TimePoint now, Actions& out) {
  last_poll_ = std::max(last_poll_, now);
  for (Pool& pool : pools_) pool.guard_ends = TimePoint::max();
  ++polls_;
  // Nothing held or queued: nothing to expire, dispatch or preempt for (the
  // usual case after a completion at low load).
  if (queued_ == 0) return;
  // Expire first, so nothing past its deadline is ever dispatched; preempt
  // last, so nothing is preempted for a class that a free slot could serve.
  expire_due(now, out);
  expire_stranded(now, out);
  if (queued_ == 0) return;
  promote_held(now);
  for (uint32_t p = 0; p < pools_.size(); ++p) dispatch_pool(p, now, out);
  // A lender dispatched after its borrower may have been left with nothing
  // of its own to dispatch and room to lend: borrowers try once more.
  // Then background work that is next in the policy's order may take the
  // backends' extra slots (adaptive capacity).
  for (uint32_t p = 0; p < pools_.size(); ++p) {
    if (!pools_[p].lenders.empty()) dispatch_pool(p, now, out);
    if (pools_[p].extra > 0) dispatch_pool(p, now, out, SlotPass::kExtra);
    note_blocked(p, now);
  }
  restore_deferred();
  if (config_.policy != Policy::kHybrid) return;
  if (config_.preemption) {
    for (uint32_t p = 0; p < pools_.size(); ++p) preempt_pool(p, now, out);
  }
}

TimePoint Scheduler::preemption_due(const ClassQueue& cq, uint32_t klass) const {
  // The oldest request on the class's arrival list; requests off it (own
  // deadlines, requeued victims) carry no wait to measure: due at once. A
  // class with a short max_queue_wait gets half of it, so its requests are
  // never left to expire while waiting for the delay.
  if (cq.arrivals_head == kNil) return TimePoint::min();
  const Duration delay = std::min(config_.preempt_after, config_.classes[klass].max_queue_wait / 2);
  return nodes_[cq.arrivals_head].queued_since + delay;
}

std::optional<TimePoint> Scheduler::next_wakeup() const {
  if (queued_ == 0) return std::nullopt;  // deadlines, holds and preemptions are all of queued work
  TimePoint wake = TimePoint::max();
  if (!expiry_.empty()) wake = from_ticks(expiry_.top().key.primary);
  if (!held_.empty()) wake = std::min(wake, from_ticks(held_.top().key.primary));
  const bool preempting = config_.policy == Policy::kHybrid && config_.preemption;
  const auto classes = static_cast<uint32_t>(config_.classes.size());
  for (const Pool& pool : pools_) {
    bool background_running = false;
    for (uint32_t c = 0; c < classes && preempting; ++c) {
      background_running |= config_.classes[c].background && pool.classes[c].own_in_flight() > 0;
    }
    // A draining prefill backlog: only future times (see below).
    if (const TimePoint opens = backlog_opens(pool); opens > last_poll_) wake = std::min(wake, opens);
    // A victim or a loan the thrash guard kept: its guard's end (in the future).
    if (pool.guard_ends > last_poll_) wake = std::min(wake, pool.guard_ends);
    for (uint32_t c = 0; c < classes; ++c) {
      const ClassQueue& cq = pool.classes[c];
      wake = std::min(wake, cq.oldest_deadline);
      // Its oldest request may borrow a lender's slot once its SLO is at
      // risk (may_borrow): poll then, if that is still to come.
      if (!pool.lenders.empty() && cq.ready > 0 && cq.arrivals_head != kNil) {
        const Node& head = nodes_[cq.arrivals_head];
        if (head.slo_at != TimePoint::max() && head.slo_at - slo_lead_[c] > last_poll_)
          wake = std::min(wake, head.slo_at - slo_lead_[c]);
      }
      if (!preempting || cq.ready == 0) continue;
      // Waiting work that may become entitled to preempt: poll then. Only
      // future times, or a class that stays entitled (but finds no victim)
      // would make every poll ask for the next one at once.
      const ClassPolicy& cls = config_.classes[c];
      const bool short_of_share = share_deficit(cls.min_share, cq, pool.capacity) > 0;
      if (!short_of_share && !(background_running && !cls.background)) continue;
      if (const TimePoint due = preemption_due(cq, c); due > last_poll_) wake = std::min(wake, due);
    }
  }
  if (wake == TimePoint::max()) return std::nullopt;
  return wake;
}

TimePoint Scheduler::backlog_opens(const Pool& pool) const {
  // Only when ready work waits and no backend could take it now (after the
  // last poll) can a draining prefill backlog be what it waits for: then the
  // earliest time a backend's backlog falls below the limit. O(C + B).
  if (!has_ready(pool)) return TimePoint::max();
  const double fraction =
      config_.policy == Policy::kHybrid && !top_has_ready(pool, top_priority(pool)) ? kLowerTierBacklog
                                                                                   : 1.0;
  if (pick_backend(pool, last_poll_, fraction) != kNil) return TimePoint::max();
  TimePoint opens = TimePoint::max();
  for (const detail::Backend& b : pool.backends) {
    if (b.max_backlog <= 0 || !signal_allows(b) || b.used(SlotPass::kLimit) >= b.limit) continue;
    const double excess = b.backlog - b.max_backlog * fraction;  // to drain from backlog_at
    const auto wait = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double>(std::max(0.0, excess) / b.prefill_rate));
    opens = std::min(opens, b.backlog_at + wait + std::chrono::microseconds(1));
  }
  return opens;
}

void Scheduler::expire_due(TimePoint now, Actions& out) {
  while (!expiry_.empty() && expiry_.top().key.primary <= ticks(now)) {
    expire(expiry_.top().id, now, out);
  }
  for (Pool& pool : pools_) {
    for (ClassQueue& cq : pool.classes) {
      while (cq.oldest_deadline <= now) expire(cq.arrivals_head, now, out);
    }
  }
}

void Scheduler::note_blocked(uint32_t pool, TimePoint now) {
  // After dispatch_pool, a class with ready work was at its cap, or found no
  // backend with room (capacity, signals, prefill backlog). O(C + B).
  Pool& p = pools_[pool];
  WaitReason pool_reason = WaitReason::kCapacity;
  bool room = false;
  bool room_in_all = false;  // below the limit counting everything running (SlotPass::kExcess)
  // The backends only matter to a class with ready work.
  for (const detail::Backend& b : has_ready(p) ? std::span(p.backends) : std::span<detail::Backend>()) {
    if (b.signal.down || b.used(SlotPass::kLimit) >= b.limit) continue;
    if (b.signal.saturated && !b.signal.stale) {
      if (pool_reason == WaitReason::kCapacity) pool_reason = WaitReason::kSaturated;
    } else if (backlog_full(b, now, 1.0)) {
      pool_reason = WaitReason::kPrefill;
    } else {
      room = true;  // a class may still be kept off it: its cap, or the top class's headroom
      room_in_all |= b.used(SlotPass::kExcess) < b.limit;
    }
  }
  for (uint32_t c = 0; c < p.classes.size(); ++c) {
    ClassQueue& cq = p.classes[c];
    if (cq.ready == 0) {
      cq.blocked = cq.queued > 0 ? WaitReason::kDebounce : WaitReason::kNone;
    } else if (deferred_top(cq)) {
      cq.blocked = WaitReason::kTenantCap;  // every tenant with ready work is at its cap
    } else if (cq.tenant_held) {
      // Picked (also when capped: idle slots are lent), then kept off the
      // slots left for the other tenants.
      cq.blocked = WaitReason::kTenantHeadroom;
    } else if (config_.policy == Policy::kHybrid && cq.paused) {
      cq.blocked = WaitReason::kPaused;
    } else if (config_.policy == Policy::kHybrid && config_.classes[c].max_share < 1 && capped(p, c)) {
      cq.blocked = WaitReason::kShareCap;  // no slot goes to it while others have work
    } else if (room && !room_in_all && (config_.classes[c].background || behind_excess(p, c))) {
      cq.blocked = WaitReason::kCapacity;  // the free slots of the limit are beside a flooder's excess
    } else {
      cq.blocked = room ? WaitReason::kPrefill : pool_reason;  // room: the top class's headroom
    }
    cq.tenant_held = false;
  }
}

void Scheduler::expire(uint32_t id, TimePoint now, Actions& out) {
  const Node& n = nodes_[id];
  Expired expired{.handle = handle_of(id),
                  .user = n.user,
                  .pool = n.pool,
                  .klass = n.klass,
                  .waited = now - n.queued_since,
                  .retry_after = {},
                  .waited_for = pools_[n.pool].classes[n.klass].blocked};
  ++counters_.classes[n.klass].expired;
  drop_queued(id);
  expired.retry_after = expected_drain(expired.pool, expired.klass, now);
  out.expired.push_back(expired);
}

bool Scheduler::stranded(uint32_t pool) const {
  const Pool& p = pools_[pool];
  if (p.capacity > 0) return false;
  for (const uint32_t l : p.lenders) {
    if (pools_[l].capacity > 0) return false;
  }
  return true;
}

void Scheduler::expire_stranded(TimePoint now, Actions& out) {
  for (uint32_t pool = 0; pool < pools_.size(); ++pool) {
    const Pool& p = pools_[pool];
    bool queued = false;
    for (const ClassQueue& cq : p.classes) queued |= cq.queued > 0;
    if (!queued || !stranded(pool)) continue;
    // Requeued ones too (preempted or failed over): their streams end with
    // an error event rather than waiting for an engine that may not return.
    for (uint32_t id = 0; id < nodes_.size(); ++id) {
      const Node& n = nodes_[id];
      if (n.pool != pool || (n.state != NodeState::kQueued && n.state != NodeState::kHeld)) continue;
      Expired expired{.handle = handle_of(id),
                      .user = n.user,
                      .pool = n.pool,
                      .klass = n.klass,
                      .waited = now - n.queued_since,
                      .retry_after = std::max(config_.min_retry_after, kNoBackendRetryAfter),
                      .waited_for = WaitReason::kSaturated,
                      .no_backend = true};
      ++counters_.classes[n.klass].no_backend;
      drop_queued(id);
      out.expired.push_back(expired);
    }
  }
}

void Scheduler::promote_held(TimePoint now) {
  while (!held_.empty() && held_.top().key.primary <= ticks(now)) {
    const uint32_t id = held_.top().id;
    held_.erase(0, order_pos());
    make_ready(id);
  }
}

void Scheduler::dispatch_pool(uint32_t pool, TimePoint now, Actions& out, SlotPass pass) {
  Pool& p = pools_[pool];
  // The best priority in use cannot change while dispatching: a dispatch
  // moves a class's work from ready to in flight, and it stays in use.
  const bool hybrid = config_.policy == Policy::kHybrid;
  const int top = hybrid ? top_priority(p) : 0;
  for (;;) {
    // Nothing to start: no backend scan (the usual poll below saturation,
    // where something is queued in another pool or held for a debounce).
    if (!has_ready(p)) return;
    // Its own backends first; when none has room, a lender's idle ones.
    uint32_t run = pool;
    BackendScan seen;
    BackendScan* const scan = p.prefix.enabled() ? &seen : nullptr;  // for route(): affinity reads it
    uint32_t least = pick_backend(p, now, 1.0, kNil, pass, scan);
    if (least == kNil && (pass != SlotPass::kLimit || (run = lender_with_room(pool, now, least)) == kNil)) return;
    const uint32_t id = pick_request(pool, now, top);
    if (id == kNil) return;
    // A tenant at a cap of its own (tenant_max_running, tenant_max_share):
    // its other requests wait out this poll behind the class's other
    // tenants. One over its fair-share cap (tenant_fair_cap) too, until no
    // other tenant of its class has work that may start: then the class
    // opens to its excess (open_excess), which takes only slots nobody else
    // holds and never counts against the limit the others are served
    // within. The class keeps its place among the classes meanwhile.
    const uint32_t tq = nodes_[id].tenant;
    const uint32_t klass = nodes_[id].klass;
    ClassQueue& cq = p.classes[klass];
    const bool excess = hybrid && tenant_capped(tq);
    if (excess && (at_tenant_cap(tenants_[tq].pool, tenants_[tq].tenant) || cq.excess_open != polls_)) {
      defer_tenant(tq);
      if (deferred_top(cq)) open_excess(pool, klass);
      continue;
    }
    // Other work next in line waits for a slot below the limit: the extra
    // slots are not for it, and background does not go ahead of it.
    const bool background = config_.classes[klass].background;
    if (pass == SlotPass::kExtra && !background) return;
    // A flooder's excess, background work (idle capacity only) and work of
    // a class less urgent than one holding excess (it would not have gone
    // ahead of that class's requests) take a slot only while the backend
    // runs fewer than its limit in all.
    const bool outside_excess = excess || background || behind_excess(p, klass);
    const SlotPass fits = outside_excess && pass == SlotPass::kLimit ? SlotPass::kExcess : pass;
    if (run == pool && fits != pass && (least = pick_backend(p, now, 1.0, kNil, fits, scan)) == kNil) {
      // Its own backends are full counting everything running: a lender's
      // idle slot, if it may borrow one (borrowed, not excess: the lender
      // takes it back as it takes any loan).
      run = lender_with_room(pool, now, least);
      if (run == kNil && excess) {
        defer_tenant(tq);
        continue;
      }
      if (run == kNil) return;
    }
    if (run != pool) {
      if (!may_borrow(nodes_[id], now)) {
        if (excess) {
          defer_tenant(tq);
          continue;
        }
        if (guarded(nodes_[id], now)) p.guard_ends = std::min(p.guard_ends, guard_end(nodes_[id]));
        return;
      }
      // Borrowed work is the lender's lowest tier: half its prefill
      // backlog, its own prompt included (a long prompt would hold up the
      // lender's next request for whole prefill steps).
      const Routed where = route(pools_[run], nodes_[id], now, kLowerTierBacklog, least);
      if (where.backend == kNil && hybrid && nodes_[id].adapter != 0) {
        defer_tenant(tq);  // no open lender backend serves its adapter: the class's others may go
        continue;
      }
      if (where.backend == kNil || !fits_loan(pools_[run].backends[where.backend], nodes_[id], now)) return;
      start(id, run, where, now, out);
      if (hybrid && deferred_top(cq)) open_excess(pool, klass);
      continue;
    }
    // Below the top priority, a backend takes new work only while its
    // prefill backlog leaves headroom for the top class (hybrid; the top
    // class's requests are picked first whenever they may start, so a
    // request that needs headroom and finds none means nothing may start).
    // A request rescued for its SLO (pick_rescue) may use the headroom.
    // With tenant_headroom, a flooding tenant's request is treated the same
    // and leaves the pool's last slots free; it is picked only when no
    // tenant within its share has work in its class, so it waits.
    if (hybrid && keeps_tenant_headroom(p, nodes_[id], now)) {
      p.classes[klass].tenant_held = true;  // the other classes may still start
      continue;
    }
    const bool headroom = hybrid && ((config_.classes[klass].engine_priority != top &&
                                      !slo_at_risk(nodes_[id], now)) ||
                                     flooding(nodes_[id].tenant, now));
    const Routed where =
        route(p, nodes_[id], now, headroom ? kLowerTierBacklog : 1.0, headroom ? kNil : least, fits,
              headroom ? nullptr : scan);
    if (where.backend == kNil && hybrid && nodes_[id].adapter != 0) {
      // A LoRA request whose backends are full or busy with other adapters
      // waits; its tenant's next request that can start goes ahead of it,
      // as vLLM passes over a request whose adapter has no slot. When none
      // can, the class's other tenants may start.
      const auto [next, at] = lora_alternative(p, tq, id, now, headroom ? kLowerTierBacklog : 1.0,
                                               headroom ? kNil : least, fits);
      if (next != kNil) {
        start(next, pool, at, now, out, excess && pass == SlotPass::kLimit);
        if (deferred_top(cq)) open_excess(pool, klass);
        continue;
      }
      defer_tenant(tq);
      continue;
    }
    if (where.backend == kNil && excess) {
      defer_tenant(tq);  // no slot outside the others' for it: the rest of the class's excess waits too
      continue;
    }
    if (where.backend == kNil) return;
    // In the extra pass it takes an extra slot (above the limit), not excess.
    start(id, pool, where, now, out, excess && pass == SlotPass::kLimit);
    if (hybrid && deferred_top(cq)) open_excess(pool, klass);  // its last other tenant just started
  }
}

bool Scheduler::has_ready(const Pool& pool) {
  for (const ClassQueue& cq : pool.classes) {
    if (cq.ready > 0) return true;
  }
  return false;
}

bool Scheduler::behind_excess(const Pool& pool, uint32_t klass) const {
  // O(1) without excess running, else O(C).
  if (pool.excess == 0) return false;
  const int priority = config_.classes[klass].engine_priority;
  for (uint32_t c = 0; c < pool.classes.size(); ++c) {
    if (pool.classes[c].excess > 0 && config_.classes[c].engine_priority < priority) return true;
  }
  return false;
}

bool Scheduler::fits_loan(const detail::Backend& b, const Node& n, TimePoint now) {
  return b.max_backlog <= 0 || backlog(b, now) + n.prompt <= b.max_backlog * kLowerTierBacklog;
}

bool Scheduler::may_borrow(const Node& n, TimePoint now) const {
  // Work the lender can take back borrows whenever its own pool is full.
  // Other work borrows only to save its TTFT SLO: on a lender its prompt is
  // likely not cached (it costs more there than a short wait at home), and
  // the lender's own work could not have the slot back before it ends. A
  // request inside its thrash guard is not a victim yet: a loan to it could
  // not be taken back either, and the lender's guarantee would slip.
  const ClassPolicy& cls = config_.classes[n.klass];
  const bool reclaimable = config_.policy == Policy::kHybrid && config_.preemption &&
                           (cls.preemptible || cls.background) && n.resumable && !guarded(n, now);
  return reclaimable || slo_at_risk(n, now);
}

bool Scheduler::guarded(const Node& n, TimePoint now) const { return n.preemptions > 0 && now < guard_end(n); }

TimePoint Scheduler::guard_end(const Node& n) const {
  // Its queued_since is its requeue time, to within the abort's round trip.
  return n.queued_since + config_.preempt_guard;
}

uint32_t Scheduler::lender_with_room(uint32_t pool, TimePoint now, uint32_t& least) const {
  // A lender lends while none of its own work is dispatchable (what waits
  // for a debounce does not count: it cannot take a slot yet), and only
  // backlog it would leave to a lower tier. The first in the configured
  // order with such a backend. O(L * (C + B)).
  for (const uint32_t l : pools_[pool].lenders) {
    const Pool& lender = pools_[l];
    if (has_ready(lender)) continue;
    if ((least = pick_backend(lender, now, kLowerTierBacklog)) != kNil) return l;
  }
  return kNil;
}

bool Scheduler::signal_allows(const detail::Backend& b) {
  // A stale verdict is ignored: the concurrency limit alone applies.
  return !b.signal.down && !(b.signal.saturated && !b.signal.stale);
}

double Scheduler::drained_backlog(const detail::Backend& b, TimePoint now) {
  const double drained = b.prefill_rate * std::chrono::duration<double>(now - b.backlog_at).count();
  return std::max(0.0, b.backlog - drained);
}

double Scheduler::backlog(const detail::Backend& b, TimePoint now) {
  // Two upper bounds of the engine's prefill queue: the prompts dispatched,
  // drained at the engine's full prefill speed, and the prompts of requests
  // whose first token has not been reported (first_token()); the second
  // catches prefix-cache hits and aborted requests that cost the engine less.
  return std::min(drained_backlog(b, now), b.pending);
}

bool Scheduler::backlog_full(const detail::Backend& b, TimePoint now, double fraction) {
  // The slack absorbs rounding, so a backend is open at backlog_opens().
  return b.max_backlog > 0 && backlog(b, now) >= b.max_backlog * fraction - 1e-6;
}

uint32_t Scheduler::pick_backend(const Pool& pool, TimePoint now, double fraction, uint32_t exclude,
                                 SlotPass pass, BackendScan* scan) const {
  // Least in-flight relative to its limit among backends with room; the scan
  // starts after the last pick so ties rotate. O(B), and B is small.
  const auto n = static_cast<uint32_t>(pool.backends.size());
  uint32_t best = kNil;
  if (scan) *scan = {};
  for (uint32_t k = 0, i = pool.next_backend; k < n; ++k, i = i + 1 == n ? 0 : i + 1) {
    const detail::Backend& b = pool.backends[i];
    if (scan) scan->load += b.signal.down ? 0 : affinity_load(b);
    if (i == exclude || !open_to(b, now, fraction, pass)) continue;
    if (scan && i < 64) scan->open |= uint64_t{1} << i;
    const detail::Backend& c = pool.backends[best == kNil ? i : best];
    if (best == kNil || uint64_t{b.used(pass)} * c.slots(pass) < uint64_t{c.used(pass)} * b.slots(pass)) {
      best = i;
    }
  }
  return best;
}

bool Scheduler::open_to(const detail::Backend& b, TimePoint now, double fraction, SlotPass pass) {
  return signal_allows(b) && b.used(pass) < b.slots(pass) && !backlog_full(b, now, fraction);
}

Scheduler::Routed Scheduler::route(const Pool& pool, const Node& n, TimePoint now, double fraction, uint32_t least,
                                   SlotPass pass, const BackendScan* scan) const {
  if (n.adapter != 0) return route_lora(pool, n, now, fraction, pass, &pool == &pools_[n.pool]);
  BackendScan own;
  if (least == kNil) {
    least = pick_backend(pool, now, fraction, kNil, pass, &own);
    scan = &own;
  }
  // A retry after a failed run goes to another backend (its prefix, if
  // cached anywhere, was most likely on the failed one): it waits for one
  // while another is up, full or saturated for now; only a pool with no
  // other live backend sends it back to the one that failed.
  if (n.avoid != kNoAvoid && least != kNil && &pool == &pools_[n.pool]) {
    const uint32_t other = pick_backend(pool, now, fraction, n.avoid, pass);
    if (other != kNil) return {.backend = other, .placement = Placement::kAvoidFailed};
    for (uint32_t b = 0; b < pool.backends.size(); ++b) {
      if (b != n.avoid && !pool.backends[b].signal.down) return {.backend = kNil};
    }
  }
  if (least == kNil || n.prefix_len == 0 || !pool.prefix.enabled()) return {.backend = least};
  const double bound = scan ? affinity_bound(pool, n, pass, scan->load) : affinity_bound(pool, n, pass);
  const auto under_bound = [&](const detail::Backend& b) {
    return within_affinity_bound(affinity_load(b) + n.slots, bound, b.slots(pass));
  };
  const auto within = [&](uint32_t i) {
    const detail::Backend& b = pool.backends[i];
    const bool open = scan && i < 64 ? ((scan->open >> i) & 1) != 0 : open_to(b, now, fraction, pass);
    return open && under_bound(b);
  };
  // Among those: the earliest expected first token, i.e. the backend's
  // prefill backlog plus the part of the prompt it does not hold, at its
  // prefill rate (without a rate, the longest prefix held). The holders of
  // the longest prefix save what they hold. Near-ties go to the rendezvous
  // choice of the prompt's first block, so gateway replicas send a new
  // prefix to the same backend and then find it there.
  const PrefixIndex::Match match = pool.prefix.longest({n.prefix, n.prefix_len});
  uint32_t best = kNil;
  bool best_holds = false;
  double best_cost = 0;
  uint64_t best_score = 0;
  for (uint32_t b = 0; b < pool.backends.size(); ++b) {
    const detail::Backend& x = pool.backends[b];
    const bool holder = std::find(match.backends.begin(), match.backends.begin() + match.count, b) !=
                        match.backends.begin() + match.count;
    if (!within(b) && !(holder && holder_despite_signal(x, now, fraction, pass) && under_bound(x))) continue;
    const double saved = holder ? static_cast<double>(match.depth) * kPrefixBlockTokens : 0;
    const double cost = x.prefill_rate > 0
                            ? (backlog(x, now) + std::max(0.0, n.prompt - saved)) / x.prefill_rate
                            : -saved;
    const uint64_t score = rendezvous(n.prefix[0] ^ config_.rendezvous_salt, b);
    const bool tie = best != kNil && std::abs(cost - best_cost) <= kAffinityTie;
    if (best == kNil || (tie ? score > best_score : cost < best_cost)) {
      best = b;
      best_holds = holder && match.depth > 0;
      best_cost = cost;
      best_score = score;
    }
  }
  if (best == kNil) return {.backend = least, .placement = Placement::kOverBound};
  if (!best_holds) return {.backend = best, .placement = Placement::kPrefixNew};
  return {.backend = best, .placement = Placement::kPrefixHeld, .prefix_blocks = static_cast<uint16_t>(match.depth)};
}

double Scheduler::affinity_bound(const Pool& pool, const Node& n, SlotPass pass) const {
  uint64_t load = 0;
  for (const detail::Backend& b : pool.backends) load += b.signal.down ? 0 : affinity_load(b);
  return affinity_bound(pool, n, pass, load);
}

double Scheduler::affinity_bound(const Pool& pool, const Node& n, SlotPass pass, uint64_t load) const {
  // Bounded loads: a backend may take the request while its share of slots
  // in use, with it, stays within (1 + slack) x the pool's, plus an eighth
  // of its slots so a quiet pool keeps its affinity; one hot prefix (or
  // adapter) cannot pile onto one engine. A backend's load is the larger of
  // its slots in use here and what its engine reports running: other
  // gateway replicas' requests count too.
  const uint64_t used = n.slots + load;
  const uint32_t slots = pool.capacity + (pass == SlotPass::kExtra ? pool.extra : 0);
  const double average = static_cast<double>(used) / std::max<uint32_t>(slots, 1);
  return (1 + config_.affinity_load_slack) * average + kAffinityMinSlack;
}

uint32_t Scheduler::pick_request(uint32_t pool, TimePoint now, int top) {
  switch (config_.policy) {
    case Policy::kFifo: {
      const auto& fifo = pools_[pool].fifo;
      return fifo.empty() ? kNil : fifo.top().id;
    }
    case Policy::kPriority:
      for (uint32_t c : priority_order_) {
        const auto& order = pools_[pool].classes[c].order;
        if (!order.empty()) return order.top().id;
      }
      return kNil;
    case Policy::kHybrid:
      break;
  }
  return pick_hybrid(pool, now, top);
}

int64_t Scheduler::cap_room(const Pool& pool, uint32_t klass) const {
  // A class may always hold one slot: on a small pool (max_share * capacity
  // < 1) a cap would otherwise starve it completely. Background classes'
  // share is also of the extra slots, which only they may take.
  // A paused class takes nothing new (its running work finishes).
  if (pool.classes[klass].paused) return -static_cast<int64_t>(pool.classes[klass].own_in_flight());
  const ClassPolicy& cls = config_.classes[klass];
  const double slots = pool.capacity + (cls.background ? pool.extra : 0);
  const double cap = std::max(1.0, cls.max_share * slots);
  return static_cast<int64_t>(std::floor(cap + kSlotEpsilon)) - pool.classes[klass].own_in_flight();
}

bool Scheduler::capped(const Pool& pool, uint32_t klass) const { return cap_room(pool, klass) <= 0; }

bool Scheduler::closed(const Pool& pool, uint32_t klass) const {
  return pool.classes[klass].tenant_held || deferred_top(pool.classes[klass]) || capped(pool, klass);
}

uint32_t Scheduler::pick_hybrid(uint32_t pool, TimePoint now, int top) {
  // Two tiers: the non-background classes with the best priority in use
  // (work queued or running) go before all others, as under the priority
  // policy, so the most urgent work never waits behind less urgent work;
  // then the rest. Inside each tier: guarantees, aging, weighted share.
  // A min_share is therefore guaranteed against classes of the same or a
  // lower priority. Then borrowing and background across tiers.
  Pool& p = pools_[pool];
  const bool top_ready = top_has_ready(p, top);
  for (const bool upper : {true, false}) {
    if (upper && !top_ready) continue;
    const auto in_tier = [&](uint32_t c) {
      return !config_.classes[c].background && (config_.classes[c].engine_priority == top) == upper;
    };
    if (const uint32_t id = pick_in_tier(pool, now, in_tier); id != kNil) return id;
  }
  return pick_leftover(pool, now);
}

bool Scheduler::slo_at_risk(const Node& n, TimePoint now) const {
  if (n.slo_at == TimePoint::max() || now < n.slo_at - slo_lead_[n.klass]) return false;
  const double rate = pools_[n.pool].prefill_rate;
  const auto prefill = rate > 0 ? std::chrono::duration_cast<Duration>(
                                      std::chrono::duration<double>(n.prompt / rate))
                                : Duration::zero();
  return now + prefill < n.slo_at;
}

template <class InTier>
uint32_t Scheduler::pick_rescue(uint32_t pool, TimePoint now, const InTier& in_tier) {
  // 0. SLO rescue, ahead of tiers and shares: among the classes whose
  // oldest queued request is at risk of missing its ttft_slo and can still
  // make it, the earliest SLO first. Each class's requests are served by
  // head_of_class, so the tenant rule holds. A request past saving gets no
  // rescue: serving it first would push the next ones past theirs too.
  Pool& p = pools_[pool];
  uint32_t best = kNil;
  for (uint32_t c = 0; c < p.classes.size(); ++c) {
    const ClassQueue& cq = p.classes[c];
    if (cq.ready == 0 || slo_lead_[c] == Duration::zero() || !in_tier(c) || closed(p, c)) {
      continue;
    }
    const uint32_t head = cq.arrivals_head;
    if (head == kNil || nodes_[head].state != NodeState::kQueued || !slo_at_risk(nodes_[head], now)) continue;
    if (best == kNil || nodes_[head].slo_at < nodes_[best].slo_at) best = head;
  }
  return best == kNil ? kNil : head_of_class(pool, nodes_[best].klass, now);
}

template <class InTier>
uint32_t Scheduler::pick_in_tier(uint32_t pool, TimePoint now, const InTier& in_tier) {
  Pool& p = pools_[pool];
  const auto classes = static_cast<uint32_t>(config_.classes.size());

  if (const uint32_t id = pick_rescue(pool, now, in_tier); id != kNil) return id;

  // 1. Guarantees: the class furthest below its min_share goes first.
  uint32_t best = kNil;
  double best_ratio = std::numeric_limits<double>::infinity();
  for (uint32_t c = 0; c < classes; ++c) {
    const ClassQueue& cq = p.classes[c];
    const double guaranteed = config_.classes[c].min_share * p.capacity;
    if (cq.ready == 0 || !in_tier(c) || cq.own_in_flight() + kSlotEpsilon >= guaranteed || closed(p, c)) continue;
    const double ratio = cq.own_in_flight() / guaranteed;
    if (ratio < best_ratio) {
      best_ratio = ratio;
      best = c;
    }
  }
  if (best != kNil) return head_of_class(pool, best, now);

  // 2. Aging: a class holding a request in the last aging_fraction of its
  // allowed wait jumps the weighted order, the earliest such deadline first.
  // The class is still charged, so the jump is borrowed from its later
  // turns, not stolen. Aging picks the class, never the tenant: inside it
  // head_of_class's tenant rule applies, so a flooding tenant whose
  // requests all age cannot go ahead of tenants within their share.
  // Candidates per class: the oldest request with the class deadline (head
  // of the arrival list, unless still held by its debounce) and the most
  // urgent one with its own deadline (top of the urgency heap).
  uint32_t urgent = kNil;
  const auto earlier = [this](uint32_t a, uint32_t b) {
    return b == kNil || nodes_[a].deadline < nodes_[b].deadline ||
           (nodes_[a].deadline == nodes_[b].deadline && nodes_[a].seq < nodes_[b].seq);
  };
  const int64_t now_ticks = ticks(now);
  for (uint32_t c = 0; c < classes; ++c) {
    const ClassQueue& cq = p.classes[c];
    if (!in_tier(c)) continue;
    const bool listed = cq.oldest_deadline != TimePoint::max() &&
                        cq.oldest_deadline - aging_lead_[c] <= now &&
                        nodes_[cq.arrivals_head].state == NodeState::kQueued;
    const bool own = !cq.urgent.empty() && cq.urgent.top().key.primary <= now_ticks;
    if ((!listed && !own) || closed(p, c)) continue;
    if (listed && earlier(cq.arrivals_head, urgent)) urgent = cq.arrivals_head;
    if (own && earlier(cq.urgent.top().id, urgent)) urgent = cq.urgent.top().id;
  }
  if (urgent != kNil) return head_of_class(pool, nodes_[urgent].klass, now);

  // 3. Weighted fair share in tokens: the backlogged class with the least
  // virtual time.
  best = kNil;
  for (uint32_t c = 0; c < classes; ++c) {
    const ClassQueue& cq = p.classes[c];
    if (cq.ready == 0 || !in_tier(c) || closed(p, c)) continue;
    if (best == kNil || cq.vtime < p.classes[best].vtime) best = c;
  }
  if (best == kNil) return kNil;
  p.class_vclock = std::max(p.class_vclock, p.classes[best].vtime);
  return head_of_class(pool, best, now);
}

uint32_t Scheduler::pick_leftover(uint32_t pool, TimePoint now) {
  // 4. Idle capacity is lent: a class at its max_share takes a slot only
  // when no class under its cap can use it, so a lent slot is never taken by
  // a new dispatch while others wait. 5. Only when no other class can use
  // the slot: background. Both by virtual time.
  Pool& p = pools_[pool];
  for (const bool background : {false, true}) {
    uint32_t best = kNil;
    for (uint32_t c = 0; c < p.classes.size(); ++c) {
      const ClassQueue& cq = p.classes[c];
      if (config_.classes[c].background != background || cq.ready == 0 || cq.paused || cq.tenant_held ||
          deferred_top(cq)) {
        continue;
      }
      if (background && capped(p, c)) continue;
      if (best == kNil || cq.vtime < p.classes[best].vtime) best = c;
    }
    if (best != kNil) {
      p.class_vclock = std::max(p.class_vclock, p.classes[best].vtime);
      return head_of_class(pool, best, now);
    }
  }
  return kNil;
}

bool Scheduler::top_has_ready(const Pool& pool, int top) const {
  for (uint32_t c = 0; c < pool.classes.size(); ++c) {
    if (pool.classes[c].ready > 0 && !config_.classes[c].background && config_.classes[c].engine_priority == top &&
        !closed(pool, c)) {
      return true;
    }
  }
  return false;
}

int Scheduler::top_priority(const Pool& pool) const {
  // O(C): classes are few.
  int top = std::numeric_limits<int>::max();
  for (uint32_t c = 0; c < pool.classes.size(); ++c) {
    const ClassQueue& cq = pool.classes[c];
    if (config_.classes[c].background || (cq.ready == 0 && cq.in_flight == 0)) continue;
    top = std::min(top, config_.classes[c].engine_priority);
  }
  return top;
}

void Scheduler::start(uint32_t id, uint32_t run_pool, Routed where, TimePoint now, Actions& out, bool excess) {
  const uint32_t backend = where.backend;
  remove_ready(id);
  untrack_deadline(id);
  Node& n = nodes_[id];
  Pool& pool = pools_[run_pool];  // whose backend it takes
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  const bool borrowed = run_pool != n.pool;
  TenantQueue& tq = tenants_[n.tenant];
  const ClassPolicy& cls = config_.classes[n.klass];
  --cq.queued;
  cq.queued_cost -= n.cost;
  --tq.queued;
  tq.queued_cost -= n.cost;
  --queued_;
  n.state = NodeState::kInFlight;
  n.run_pool = run_pool;
  n.backend = backend;
  n.start_seq = next_start_seq_++;
  pool.next_backend = backend + 1 == pool.backends.size() ? 0 : backend + 1;
  detail::Backend& b = pool.backends[backend];
  if (b.max_backlog > 0) {
    n.cached_blocks = config_.affinity_cache_credit ? cached_blocks(pool, backend, n) : 0;
    b.backlog = drained_backlog(b, now) + uncached_prompt(n);
    b.backlog_at = now;
    b.pending += uncached_prompt(n);
    n.prefilling = true;
  }
  if (n.prefix_len > 0) pool.prefix.record(backend, {n.prefix, n.prefix_len});
  if (n.adapter != 0) lora_started(b, n, where.placement);
  // With the limit's slots all taken, only background work gets here (the
  // extra pass): it takes an extra slot.
  n.excess_slot = excess;
  n.extra_slot = !excess && b.used(SlotPass::kLimit) >= b.limit;
  if (n.extra_slot) b.extra_taken += n.slots;
  if (n.excess_slot) {
    b.excess_taken += n.slots;
    cq.excess += n.slots;
    pool.excess += n.slots;
    ++counters_.classes[n.klass].over_fair_share;
  }
  b.in_flight += n.slots;
  cq.in_flight += n.slots;
  tq.in_flight += n.slots;
  count_running(n.pool, tq.tenant, n.slots);
  ++in_flight_;
  if (borrowed) {
    cq.borrowed += n.slots;
    pool.lent += n.slots;
    ++counters_.classes[n.klass].borrowed;
  }
  cq.departed.add(now, 1);
  n.charged = n.cost;
  if (config_.policy == Policy::kHybrid) {
    serve(id, static_cast<double>(n.cost), now);
    if ((cls.preemptible || cls.background) && n.resumable) {
      // Appended at the tail: the list stays in start order, the tail is
      // the most recently started, and removal is O(1). Borrowed work is
      // listed with its lender, which takes it back first.
      if (borrowed) {
        list_append(pool.borrowed_head, pool.borrowed_tail, id);
      } else {
        list_append(cq.victims_head, cq.victims_tail, id);
      }
    }
  }
  if (b.signal.stale) ++counters_.stale_dispatches;
  ++counters_.classes[n.klass].dispatched;
  out.dispatches.push_back({.handle = handle_of(id),
                            .user = n.user,
                            .pool = run_pool,
                            .backend = backend,
                            .klass = n.klass,
                            .queue_wait = now - n.queued_since,
                            // A flooder's excess is one step less urgent in an engine
                            // that schedules by priority (vLLM's `priority`): its queue
                            // and its preemptions then favour the others' requests.
                            .engine_priority = cls.engine_priority + (n.excess_slot ? 1 : 0),
                            .preemptions = n.preemptions,
                            .cost_tokens = n.cost,
                            .waited_for = now > n.queued_since ? cq.blocked : WaitReason::kNone,
                            .placement = where.placement,
                            .prefix_blocks = where.prefix_blocks});
}

void Scheduler::preempt_pool(uint32_t pool, TimePoint now, Actions& out) {
  // Runs after dispatch_pool, so any class still holding ready work found no
  // room. Two needs: classes below min_share (served by background or by
  // preemptible work above its own guarantee), and any waiting class while
  // background work runs (served by background only).
  Pool& p = pools_[pool];
  reclaim_lent(pool, now, out);
  const auto classes = static_cast<uint32_t>(config_.classes.size());
  const double capacity = p.capacity;
  int64_t waiting = 0;
  int64_t needy = 0;
  int64_t background_running = 0;
  for (uint32_t c = 0; c < classes; ++c) {
    const ClassPolicy& cls = config_.classes[c];
    const ClassQueue& cq = p.classes[c];
    if (cls.background) {
      background_running += cq.own_in_flight() - cq.preempting - cq.aborting;
      continue;
    }
    if (cq.ready == 0 || capped(p, c) || preemption_due(cq, c) > now) continue;
    // A class needs no more slots than it may hold under its max_share: a
    // class one slot below its cap with 100 requests queued needs one; and
    // requests of tenants at their cap could not use a freed slot.
    const int64_t usable =
        std::min<int64_t>(static_cast<int64_t>(cq.ready) - capped_ready(cq), cap_room(p, c));
    if (usable <= 0) continue;
    waiting += usable;
    const double deficit = share_deficit(cls.min_share, cq, capacity);
    if (deficit > 0) needy += std::min<int64_t>(static_cast<int64_t>(deficit), usable);
  }
  if (waiting == 0) return;
  // Work in the backends' extra slots holds no slot the others could use:
  // preempting it frees nothing for them.
  for (const detail::Backend& b : p.backends) background_running -= b.extra_taken;
  background_running = std::max<int64_t>(0, background_running);
  // Slots already on their way back (victims, superseded requests) count
  // against the need, so one shortage never preempts twice. Background goes
  // first, and the background part of the need never exceeds the background
  // work running; other preemptible work is only ever taken for `needy`
  // (also when the background work running cannot be taken: on a saturated
  // backend, or resumed too recently).
  const int64_t slack = int64_t{p.preempting} + p.aborting;
  const int64_t need = std::max(needy, std::min(waiting, background_running)) - slack;
  // Counted in slots: a victim running several sequences frees them all.
  for (int64_t taken = 0; taken < need;) {
    const bool guarantee = taken < needy - slack;
    TimePoint guard_ends = TimePoint::max();
    const uint32_t victim = pick_victim(p, now, guarantee, guard_ends);
    if (victim == kNil) {
      counters_.guard_held[pool] += guarantee && guard_ends != TimePoint::max();
      p.guard_ends = std::min(p.guard_ends, guard_ends);
      return;
    }
    taken += nodes_[victim].slots;
    preempt(victim, out);
  }
}

void Scheduler::reclaim_lent(uint32_t pool, TimePoint now, Actions& out) {
  // Lent slots come back as soon as the lender's own work waits (no
  // preempt_after delay: the loan was of idle capacity only): one borrowed
  // preemptible request per slot its dispatchable work could use, less the
  // slots already on their way back, the most recently started first. Its
  // background work does not take them back: it too runs on idle capacity
  // only (and while it waits, nothing new is lent).
  Pool& p = pools_[pool];
  if (p.borrowed_head == kNil) return;
  int64_t waiting = 0;
  for (uint32_t c = 0; c < p.classes.size(); ++c) {
    const ClassQueue& cq = p.classes[c];
    if (cq.ready == 0 || config_.classes[c].background) continue;
    waiting += std::max<int64_t>(0, std::min<int64_t>(cq.ready, cap_room(p, c)));
  }
  for (int64_t need = waiting - p.preempting - p.aborting; need > 0;) {
    TimePoint guard_ends = TimePoint::max();  // borrowed inside its guard: only to save its SLO
    const uint32_t victim = newest_useful_victim(p, p.borrowed_tail, now, guard_ends);
    if (victim == kNil) {
      p.guard_ends = std::min(p.guard_ends, guard_ends);
      return;
    }
    ++counters_.classes[nodes_[victim].klass].reclaimed;
    need -= nodes_[victim].slots;  // slots: all its sequences come back
    preempt(victim, out);
  }
}

void Scheduler::preempt(uint32_t victim, Actions& out) {
  unlink_victim(victim);
  Node& n = nodes_[victim];
  n.state = NodeState::kPreempting;
  if (n.run_pool == n.pool) pools_[n.pool].classes[n.klass].preempting += n.slots;
  pools_[n.run_pool].preempting += n.slots;
  ++counters_.classes[n.klass].preempted;
  out.preemptions.push_back({.handle = handle_of(victim),
                             .user = n.user,
                             .pool = n.run_pool,
                             .backend = n.backend,
                             .klass = n.klass});
}

uint32_t Scheduler::newest_useful_victim(const Pool& pool, uint32_t tail, TimePoint now,
                                         TimePoint& guard_ends) const {
  // Preempting a request on a saturated (or down) backend frees a slot that
  // nothing can use: the victim would be requeued, dispatched elsewhere or
  // again, and preempted again, over and over. Only victims whose slot the
  // waiting work can take count. The walk is bounded: saturated backends
  // holding the newest requests of a class are rare, and missing an older
  // victim only delays a guarantee until a slot frees.
  // Thrash guard: a request resumed after a preemption less than
  // preempt_guard ago is not taken again: it would pay its prompt and output
  // again for a gain the previous preemption already made.
  constexpr int kMaxScan = 16;
  int scanned = 0;
  for (uint32_t id = tail; id != kNil && scanned < kMaxScan; id = nodes_[id].prev, ++scanned) {
    const Node& n = nodes_[id];
    if (guarded(n, now)) {
      guard_ends = std::min(guard_ends, guard_end(n));
      continue;
    }
    const detail::Backend& b = pool.backends[n.backend];
    // In an extra slot or a tenant's excess: preempting it would free no
    // slot of the limit.
    if (!n.extra_slot && !n.excess_slot && signal_allows(b)) return id;
  }
  return kNil;
}

uint32_t Scheduler::pick_victim(const Pool& pool, TimePoint now, bool others, TimePoint& guard_ends) const {
  // The most recently started request (least work lost) of a background
  // class; failing that (and if `others`), of a preemptible class that stays
  // at or above its own min_share without it; in both cases on a backend
  // whose freed slot can be used. O(C) while backends are not saturated:
  // each class's list tail is its newest.
  const auto classes = static_cast<uint32_t>(config_.classes.size());
  for (const bool background : {true, false}) {
    if (!background && !others) break;
    uint32_t best = kNil;
    for (uint32_t c = 0; c < classes; ++c) {
      const ClassPolicy& cls = config_.classes[c];
      const ClassQueue& cq = pool.classes[c];
      if (cls.background != background || cq.victims_tail == kNil) continue;
      if (!background) {
        const double live = cq.own_in_flight() - cq.preempting - cq.aborting;
        if (!cls.preemptible || live - 1 + kSlotEpsilon < cls.min_share * pool.capacity) continue;
      }
      const uint32_t candidate = newest_useful_victim(pool, cq.victims_tail, now, guard_ends);
      if (candidate != kNil && (best == kNil || nodes_[candidate].start_seq > nodes_[best].start_seq)) {
        best = candidate;
      }
    }
    if (best != kNil) return best;
  }
  return kNil;
}

}  // namespace arbiter::sched
