// The scheduler's event entry points (enqueue, cancel, complete, requeue,
// backend signals), its gauges and its Retry-After estimates.
#include "core/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/prefix_blocks.hpp"

namespace arbiter::sched {

using detail::kEarlyAnswerMinQueued;
using detail::kNil;
using detail::kNoAvoid;
using detail::ticks;

namespace {

TimePoint add_saturating(TimePoint t, Duration d) {
  return d >= TimePoint::max() - t ? TimePoint::max() : t + d;
}

// Keys are scoped by tenant so one tenant can never supersede another's
// request by guessing its key.
std::string scoped_key(TenantId tenant, std::string_view key) {
  std::string scoped(sizeof tenant, '\0');
  for (std::size_t i = 0; i < sizeof tenant; ++i) scoped[i] = static_cast<char>(tenant >> (8 * i));
  scoped.append(key);
  return scoped;
}

}  // namespace

ClassCounters Counters::total() const {
  ClassCounters sum;
  for (const ClassCounters& c : classes) {
    sum.enqueued += c.enqueued;
    sum.rejected_class_full += c.rejected_class_full;
    sum.rejected_tenant_full += c.rejected_tenant_full;
    sum.rejected_predicted += c.rejected_predicted;
    sum.dispatched += c.dispatched;
    sum.completed += c.completed;
    sum.cancelled_queued += c.cancelled_queued;
    sum.cancelled_in_flight += c.cancelled_in_flight;
    sum.superseded_queued += c.superseded_queued;
    sum.superseded_in_flight += c.superseded_in_flight;
    sum.typed_through += c.typed_through;
    sum.preempted += c.preempted;
    sum.expired += c.expired;
    sum.rejected_no_backend += c.rejected_no_backend;
    sum.no_backend += c.no_backend;
    sum.borrowed += c.borrowed;
    sum.reclaimed += c.reclaimed;
    sum.over_fair_share += c.over_fair_share;
    sum.carried_over += c.carried_over;
  }
  return sum;
}

std::string_view wait_reason_name(WaitReason reason) {
  switch (reason) {
    case WaitReason::kNone: return "none";
    case WaitReason::kCapacity: return "capacity";
    case WaitReason::kSaturated: return "saturated";
    case WaitReason::kPrefill: return "prefill";
    case WaitReason::kShareCap: return "share_cap";
    case WaitReason::kDebounce: return "debounce";
    case WaitReason::kTenantHeadroom: return "tenant_headroom";
    case WaitReason::kTenantCap: return "tenant_cap";
    case WaitReason::kPaused: return "paused";
  }
  return "none";
}

std::string_view placement_name(Placement placement) {
  switch (placement) {
    case Placement::kLeastLoaded: return "least_loaded";
    case Placement::kPrefixHeld: return "prefix_held";
    case Placement::kPrefixNew: return "prefix_new";
    case Placement::kOverBound: return "over_bound";
    case Placement::kAvoidFailed: return "avoid_failed";
    case Placement::kInherited: return "inherited";
    case Placement::kAdapterLoaded: return "adapter_loaded";
    case Placement::kAdapterLoad: return "adapter_load";
    case Placement::kAdapterWait: return "adapter_wait";
  }
  return "least_loaded";
}

std::expected<Scheduler, std::string> Scheduler::create(SchedulerConfig config) {
  if (auto error = validate(config)) return std::unexpected(std::move(*error));
  return Scheduler(std::move(config));
}

Scheduler::Scheduler(SchedulerConfig config) : config_(std::move(config)) {
  const std::size_t classes = config_.classes.size();
  pools_.reserve(config_.pools.size());
  for (const PoolSpec& spec : config_.pools) {
    Pool& pool = pools_.emplace_back(config_.rate_window);
    const double backlog_s = std::chrono::duration<double>(config_.max_prefill_backlog).count();
    for (std::size_t i = 0; i < spec.max_concurrency.size(); ++i) {
      const double rate = i < spec.prefill_tokens_per_s.size() ? spec.prefill_tokens_per_s[i] : 0;
      pool.backends.push_back({.configured = spec.max_concurrency[i],
                               .limit = spec.max_concurrency[i],
                               .in_flight = 0,
                               .signal = {},
                               .prefill_rate = rate,
                               .max_backlog = rate * backlog_s,
                               .full_rate = rate,
                               .full_backlog = rate * backlog_s});
      pool.capacity += spec.max_concurrency[i];
      pool.prefill_rate = std::max(pool.prefill_rate, rate);
      detail::Backend& b = pool.backends.back();
      if (i < spec.adapters.size()) {
        b.adapters = spec.adapters[i];
        std::sort(b.adapters.begin(), b.adapters.end());
      }
      if (i < spec.max_loras.size()) b.max_loras = spec.max_loras[i];
    }
    std::vector<uint64_t> cache_blocks(spec.max_concurrency.size(), 0);
    for (std::size_t i = 0; i < spec.prefix_cache_tokens.size(); ++i) {
      cache_blocks[i] = spec.prefix_cache_tokens[i] / kPrefixBlockTokens;
    }
    pool.prefix = PrefixIndex(std::move(cache_blocks));
    pool.lenders = spec.lenders;
    pool.classes.reserve(classes);
    for (std::size_t c = 0; c < classes; ++c) pool.classes.emplace_back(config_.rate_window);
  }
  priority_order_.resize(classes);
  std::iota(priority_order_.begin(), priority_order_.end(), 0u);
  std::stable_sort(priority_order_.begin(), priority_order_.end(), [this](uint32_t a, uint32_t b) {
    return config_.classes[a].engine_priority < config_.classes[b].engine_priority;
  });
  for (const ClassPolicy& cls : config_.classes) {
    // A class without a deadline has nothing on its arrival list to age.
    const double lead = static_cast<double>(cls.max_queue_wait.count()) * config_.aging_fraction;
    aging_lead_.push_back(cls.max_queue_wait == Duration::max()
                              ? Duration::zero()
                              : Duration(static_cast<Duration::rep>(lead)));
    slo_lead_.push_back(Duration(static_cast<Duration::rep>(
        static_cast<double>(cls.ttft_slo.count()) * config_.slo_lead_fraction)));
  }
  counters_.classes.resize(classes);
  counters_.guard_held.resize(pools_.size());
}

std::expected<Admission, ApiError> Scheduler::enqueue(const Request& request, TimePoint now) {
  if (request.pool >= pools_.size() || request.klass >= config_.classes.size()) {
    return std::unexpected(ApiError{.code = ErrorCode::kInternal,
                                    .message = "scheduler: unknown pool or class",
                                    .param = std::nullopt,
                                    .retry_after = std::nullopt});
  }
  const ClassPolicy& cls = config_.classes[request.klass];
  ClassCounters& counters = counters_.classes[request.klass];
  std::string key;
  uint32_t victim = kNil;
  if (!request.supersede_key.empty()) {
    key = scoped_key(request.tenant, request.supersede_key);
    if (auto it = keys_.find(key); it != keys_.end()) victim = it->second;
  }

  if (stranded(request.pool)) {
    ++counters.rejected_no_backend;
    return std::unexpected(no_backend_error(std::max(config_.min_retry_after, kNoBackendRetryAfter)));
  }
  // Limits, not counting a queued request this one replaces in the same queue.
  const ClassQueue& cq = pools_[request.pool].classes[request.klass];
  const uint32_t existing = find_tenant_queue(request.pool, request.klass, request.tenant);
  const TenantQueue* tq = existing == kNil ? nullptr : &tenants_[existing];
  uint32_t class_depth = cq.queued;
  uint32_t tenant_depth = tq == nullptr ? 0 : tq->queued;
  if (victim != kNil) {
    const Node& v = nodes_[victim];
    const bool queued = v.state == NodeState::kHeld || v.state == NodeState::kQueued;
    if (queued && v.pool == request.pool && v.klass == request.klass) {
      --class_depth;
      --tenant_depth;
    }
  }
  if (class_depth >= cls.max_queue) {
    ++counters.rejected_class_full;
    return std::unexpected(queue_full(request.pool, request.klass, nullptr, false, now));
  }
  if (tenant_depth >= cls.max_queue_per_tenant) {
    ++counters.rejected_tenant_full;
    return std::unexpected(queue_full(request.pool, request.klass, tq, true, now));
  }

  // Early answer: what cannot start by its deadline hears so now.
  const TimePoint class_deadline = add_saturating(now, cls.max_queue_wait);
  const TimePoint deadline = std::min(class_deadline, request.deadline.value_or(TimePoint::max()));
  if (config_.policy == Policy::kHybrid && config_.early_reject_margin > 0 && deadline != TimePoint::max()) {
    const double allowed = std::chrono::duration<double>(deadline - now).count();
    const auto wait = predicted_wait_s(request.pool, request.klass, tq, now);
    if (wait && *wait > config_.early_reject_margin * allowed) {
      ++counters.rejected_predicted;
      return std::unexpected(
          predicted_late(cls.name, *wait, allowed, config_.min_retry_after, config_.max_retry_after));
    }
  }

  Admission admission;
  if (victim != kNil) admission.superseded = supersede(victim);
  // The supersede may have freed the tenant queue found above: look again.
  const uint32_t tenant = victim == kNil && existing != kNil
                              ? existing
                              : tenant_queue(request.pool, request.klass, request.tenant);
  const uint32_t id = place(request, tenant, now, deadline, class_deadline, std::move(key), true);
  ++counters.enqueued;
  admission.handle = handle_of(id);
  return admission;
}

uint32_t Scheduler::place(const Request& request, uint32_t tenant, TimePoint now, TimePoint deadline,
                          TimePoint class_deadline, std::string key, bool may_hold) {
  const ClassPolicy& cls = config_.classes[request.klass];
  const uint32_t id = alloc_node();
  const int64_t cost = std::clamp<int64_t>(request.cost_tokens, 1, kMaxCostTokens);
  Node& n = nodes_[id];
  n.user = request.user;
  n.resumable = request.resumable;
  n.slots = static_cast<uint16_t>(std::clamp<uint32_t>(request.sequences, 1, kMaxSlotsPerRequest));
  n.adapter = request.adapter;
  n.seq = next_seq_++;
  n.start_seq = 0;
  n.cost = cost;
  n.charged = 0;
  n.queued_since = now;
  n.deadline = deadline;
  n.hinted = request.ttft_slo.has_value();
  const Duration ttft_slo = request.ttft_slo.value_or(cls.ttft_slo);
  n.slo_at = ttft_slo > Duration::zero() ? add_saturating(now, ttft_slo) : TimePoint::max();
  n.key = nullptr;
  n.prefix = request.prefix_blocks.data();
  n.prefix_len = static_cast<uint32_t>(request.prefix_blocks.size());
  n.pool = n.run_pool = request.pool;
  n.klass = request.klass;
  n.tenant = tenant;
  n.backend = 0;
  n.order_pos = n.expiry_pos = n.urgent_pos = kNoPos;
  n.prev = n.next = kNil;
  n.preemptions = 0;
  n.avoid = kNoAvoid;
  n.prefilling = false;
  n.extra_slot = n.excess_slot = false;
  n.lora_swap = false;
  n.prompt = static_cast<uint32_t>(std::clamp<int64_t>(request.prompt_tokens, 0, UINT32_MAX));
  n.expires = n.deadline != TimePoint::max();
  n.linked = false;

  ClassQueue& queue = pools_[request.pool].classes[request.klass];
  TenantQueue& tenant_queue = tenants_[tenant];
  ++queue.queued;
  queue.queued_cost += cost;
  ++tenant_queue.queued;
  tenant_queue.queued_cost += cost;
  ++queued_;
  track_deadline(id, class_deadline);
  if (!key.empty()) {
    // A superseded predecessor already gave up the entry; take it over.
    const auto [entry, inserted] = keys_.insert_or_assign(std::move(key), id);
    n.key = &entry->first;
    Duration hold = may_hold ? cls.debounce : Duration::zero();
    if (may_hold && cls.adaptive_debounce) {
      const Duration budget = cls.ttft_slo > Duration::zero() ? cls.ttft_slo / 2 : Duration::max();
      hold = rhythms_.arrive(entry->first, now, std::min(cls.debounce, budget));
    }
    if (hold > Duration::zero()) {
      n.state = NodeState::kHeld;
      held_.push({ticks(add_saturating(now, hold)), n.seq}, id, order_pos());
    }
  }
  if (n.state != NodeState::kHeld) {
    make_ready(id);
  }
  return id;
}

std::optional<Handle> Scheduler::carry_over(const Request& request, const Carried& carried, TimePoint now) {
  if (request.pool >= pools_.size() || request.klass >= config_.classes.size()) return std::nullopt;
  if (carried.running && (carried.run_pool >= pools_.size() ||
                          carried.backend >= pools_[carried.run_pool].backends.size())) {
    return std::nullopt;
  }
  std::string key;
  if (!request.supersede_key.empty()) {
    key = scoped_key(request.tenant, request.supersede_key);
    // Two carried requests with one key cannot both have been live: the
    // newer replaced the older. Keep the entry of the one already placed.
    if (keys_.contains(key)) key.clear();
  }
  const uint32_t tenant = tenant_queue(request.pool, request.klass, request.tenant);
  // Its deadline as it was: a class deadline that moved with the new
  // config's max_queue_wait would make it wait more or less than it was told.
  const uint32_t id = place(request, tenant, now, carried.deadline, TimePoint::max(), std::move(key), false);
  ++counters_.classes[request.klass].carried_over;
  if (carried.running) {
    Actions unused;  // no dispatch to deliver: it runs already
    start(id, carried.run_pool, {.backend = carried.backend}, now, unused);
  }
  return handle_of(id);
}

void Scheduler::carry_counters(const Counters& old, std::span<const std::optional<ClassId>> classes,
                               std::span<const std::optional<PoolId>> pools) {
  for (std::size_t c = 0; c < old.classes.size() && c < classes.size(); ++c) {
    if (!classes[c] || *classes[c] >= counters_.classes.size()) continue;
    ClassCounters& to = counters_.classes[*classes[c]];
    const ClassCounters& from = old.classes[c];
    to.enqueued += from.enqueued;
    to.rejected_class_full += from.rejected_class_full;
    to.rejected_tenant_full += from.rejected_tenant_full;
    to.rejected_predicted += from.rejected_predicted;
    to.dispatched += from.dispatched;
    to.completed += from.completed;
    to.cancelled_queued += from.cancelled_queued;
    to.cancelled_in_flight += from.cancelled_in_flight;
    to.superseded_queued += from.superseded_queued;
    to.superseded_in_flight += from.superseded_in_flight;
    to.typed_through += from.typed_through;
    to.preempted += from.preempted;
    to.expired += from.expired;
    to.rejected_no_backend += from.rejected_no_backend;
    to.no_backend += from.no_backend;
    to.borrowed += from.borrowed;
    to.reclaimed += from.reclaimed;
    to.over_fair_share += from.over_fair_share;
    to.carried_over += from.carried_over;
  }
  for (std::size_t p = 0; p < old.guard_held.size() && p < pools.size(); ++p) {
    if (pools[p] && *pools[p] < counters_.guard_held.size()) counters_.guard_held[*pools[p]] += old.guard_held[p];
  }
  counters_.stale_dispatches += old.stale_dispatches;
}

std::optional<TimePoint> Scheduler::queue_deadline(Handle handle) const {
  const uint32_t id = resolve(handle);
  if (id == kNil) return std::nullopt;
  const Node& n = nodes_[id];
  if (n.state != NodeState::kHeld && n.state != NodeState::kQueued) return std::nullopt;
  return n.expires ? n.deadline : TimePoint::max();
}

std::optional<Superseded> Scheduler::supersede(uint32_t victim) {
  Node& n = nodes_[victim];
  Pool& run = pools_[n.run_pool];
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  const bool borrowed = n.run_pool != n.pool;  // its slot counters live with the lender
  ClassCounters& counters = counters_.classes[n.klass];
  Superseded superseded{.handle = handle_of(victim),
                        .user = n.user,
                        .in_flight = true,
                        .pool = n.run_pool,
                        .backend = n.backend};
  n.key = nullptr;  // the key's map entry now belongs to the newer request
  switch (n.state) {
    case NodeState::kHeld:
    case NodeState::kQueued:
      ++counters.superseded_queued;
      superseded.in_flight = false;
      drop_queued(victim);
      return superseded;
    case NodeState::kInFlight:
      unlink_victim(victim);
      break;
    case NodeState::kPreempting:
      if (!borrowed) cq.preempting -= n.slots;
      run.preempting -= n.slots;
      superseded.preempting = true;
      break;
    default:
      return std::nullopt;  // an aborting or free node is never the newest with its key
  }
  // It keeps its slot until the network layer reports the upstream closed.
  n.state = NodeState::kAborting;
  if (!borrowed) cq.aborting += n.slots;
  run.aborting += n.slots;
  ++counters.superseded_in_flight;
  return superseded;
}

CancelOutcome Scheduler::cancel(Handle handle) {
  const uint32_t id = resolve(handle);
  if (id == kNil) return CancelOutcome::kUnknown;
  ClassCounters& counters = counters_.classes[nodes_[id].klass];
  switch (nodes_[id].state) {
    case NodeState::kHeld:
    case NodeState::kQueued:
      ++counters.cancelled_queued;
      drop_queued(id);
      return CancelOutcome::kDequeued;
    case NodeState::kInFlight:
    case NodeState::kPreempting:
      ++counters.cancelled_in_flight;
      retire(id);
      return CancelOutcome::kReleased;
    case NodeState::kAborting:  // already counted as superseded
      retire(id);
      return CancelOutcome::kReleased;
    case NodeState::kFree:
      break;
  }
  return CancelOutcome::kUnknown;
}

bool Scheduler::complete(Handle handle, TimePoint now, std::optional<int64_t> actual_tokens) {
  const uint32_t id = resolve(handle);
  if (id == kNil) return false;
  const Node& n = nodes_[id];
  if (n.state != NodeState::kInFlight && n.state != NodeState::kAborting &&
      n.state != NodeState::kPreempting) {
    return false;
  }
  const int64_t used = actual_tokens ? std::max<int64_t>(*actual_tokens, 0) : n.charged;
  if (n.state != NodeState::kAborting) {
    ++counters_.classes[n.klass].completed;
    Pool& pool = pools_[n.pool];
    pool.classes[n.klass].completed.add(now, static_cast<double>(used));
    pool.completed.add(now, static_cast<double>(used));
  }
  // Correct the estimate charged at dispatch, so fairness follows real use.
  if (config_.policy == Policy::kHybrid && actual_tokens && used != n.charged) {
    serve(id, static_cast<double>(used - n.charged), now);
  }
  retire(id);
  return true;
}

bool Scheduler::first_token(Handle handle, TimePoint /*now*/) {
  const uint32_t id = resolve(handle);
  if (id == kNil) return false;
  Node& n = nodes_[id];
  if (n.state != NodeState::kInFlight && n.state != NodeState::kPreempting &&
      n.state != NodeState::kAborting) {
    return false;
  }
  prefilled(n);
  if (n.lora_swap) lora_swapped(pools_[n.run_pool].backends[n.backend], n);
  return true;
}

bool Scheduler::requeue_preempted(Handle handle, int64_t remaining_cost, TimePoint now) {
  const uint32_t id = resolve(handle);
  if (id == kNil || nodes_[id].state != NodeState::kPreempting) return false;
  Node& n = nodes_[id];
  if (n.preemptions < UINT16_MAX) ++n.preemptions;
  requeue(id, remaining_cost, now);
  return true;
}

bool Scheduler::requeue_failed(Handle handle, int64_t remaining_cost, TimePoint now) {
  const uint32_t id = resolve(handle);
  if (id == kNil) return false;
  Node& n = nodes_[id];
  if (n.state != NodeState::kInFlight && n.state != NodeState::kPreempting) return false;
  // A run on a lender's backend avoids nothing at home.
  n.avoid = n.run_pool == n.pool ? static_cast<uint16_t>(n.backend) : kNoAvoid;
  requeue(id, remaining_cost, now);
  return true;
}

void Scheduler::requeue(uint32_t id, int64_t remaining_cost, TimePoint now) {
  release_slot(id);
  Node& n = nodes_[id];
  const int64_t cost = std::clamp<int64_t>(remaining_cost, 1, kMaxCostTokens);
  // The continuation is charged again when it runs; refund that part now so
  // the class and tenant pay once for the whole request.
  if (config_.policy == Policy::kHybrid) {
    charge(id, -static_cast<double>(std::min(n.charged, cost)));
  }
  n.cost = cost;
  n.charged = 0;
  n.expires = false;  // its client already has a response under way
  n.queued_since = now;
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  TenantQueue& tq = tenants_[n.tenant];
  ++cq.queued;
  cq.queued_cost += cost;
  ++tq.queued;
  tq.queued_cost += cost;
  ++queued_;
  make_ready(id);  // EDF key is still its original deadline: first in its tenant queue
}

bool Scheduler::set_backend_state(PoolId pool, BackendId backend, BackendSignal signal) {
  if (pool >= pools_.size() || backend >= pools_[pool].backends.size()) return false;
  Pool& p = pools_[pool];
  detail::Backend& changed = p.backends[backend];
  const bool verdict = !same_verdict(changed.signal, signal);
  const bool went_down = signal.down && !changed.signal.down;
  const bool came_up = !signal.down && changed.signal.down;
  // A backend that went down lost its cache (or will be another engine when
  // it comes back): what the prefix index says about it no longer holds.
  if (went_down) p.prefix.forget(backend);
  changed.signal = signal;
  // Where other gateways send to the engine too, this one's prompts get its
  // share of the prefill rate, and its backlog limit is that share of one
  // (never 0: that is no limit). The backlog drained since it was last
  // brought up to date counts at the new rate: at most a scrape's error.
  const double share = std::clamp(signal.engine_share, 1e-3, 1.0);
  changed.prefill_rate = changed.full_rate * share;
  changed.max_backlog = changed.full_backlog * share;
  const uint32_t limit =
      signal.max_in_flight > 0 ? std::min(signal.max_in_flight, changed.configured) : changed.configured;
  if (went_down || came_up || limit != changed.limit || signal.extra_slots != changed.extra) {
    changed.limit = limit;
    changed.extra = signal.extra_slots;
    p.capacity = 0;
    p.extra = 0;
    for (const detail::Backend& b : p.backends) {
      if (b.signal.down) continue;
      p.capacity += b.limit;
      p.extra += b.extra;
    }
  }
  return verdict;
}

bool Scheduler::set_class_paused(PoolId pool, ClassId klass, bool paused) {
  if (pool >= pools_.size() || klass >= pools_[pool].classes.size()) return false;
  bool& flag = pools_[pool].classes[klass].paused;
  if (flag == paused) return false;
  flag = paused;
  return true;
}

bool Scheduler::class_paused(PoolId pool, ClassId klass) const {
  return pool < pools_.size() && klass < pools_[pool].classes.size() && pools_[pool].classes[klass].paused;
}

bool Scheduler::set_prefix_cache(PoolId pool, BackendId backend, uint64_t tokens) {
  if (pool >= pools_.size() || backend >= pools_[pool].backends.size()) return false;
  pools_[pool].prefix.set_capacity(backend, tokens / kPrefixBlockTokens);
  return true;
}

uint64_t Scheduler::prefix_cache(PoolId pool, BackendId backend) const {
  if (pool >= pools_.size()) return 0;
  return pools_[pool].prefix.capacity(backend) * kPrefixBlockTokens;
}

bool Scheduler::set_tenant_weight(TenantId tenant, double weight) {
  if (!std::isfinite(weight) || weight <= 0) return false;
  config_.tenant_weights[tenant] = weight;
  tenant_index_.for_each([&](uint64_t, uint32_t index) {
    TenantQueue& tq = tenants_[index];
    if (tq.tenant != tenant) return;
    ClassQueue& cq = pools_[tq.pool].classes[tq.klass];
    if (tq.share_pos != kNoPos) cq.active_weight += weight - tq.weight;
    cq.busy_weight += weight - tq.weight;  // a live tenant queue is a busy tenant
    tq.weight = weight;
  });
  return true;
}

std::chrono::milliseconds Scheduler::drain_time(uint32_t pool, uint32_t klass, double tokens,
                                                double fraction, TimePoint now) const {
  // Tokens queued divided by the recent completion rate of the class; before
  // the class has completed anything, the pool's rate; before that, an
  // assumed per-slot rate times capacity. `fraction` is the part of the
  // class's rate the queue in question gets (a tenant's weight share).
  const Pool& p = pools_[pool];
  double rate = p.classes[klass].completed.per_second(now);
  if (rate <= 0) rate = p.completed.per_second(now);
  if (rate <= 0) rate = config_.fallback_tokens_per_slot_second * p.capacity;
  rate *= fraction;
  const double lo = static_cast<double>(config_.min_retry_after.count());
  const double hi = static_cast<double>(config_.max_retry_after.count());
  const double ms = rate > 0 ? std::clamp(std::ceil(tokens / rate * 1000), lo, hi) : hi;
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

std::optional<double> Scheduler::predicted_wait_s(uint32_t pool, uint32_t klass,
                                                  const TenantQueue* tq, TimePoint now) const {
  const ClassQueue& cq = pools_[pool].classes[klass];
  // A tenant with a handful queued is decided by a handful of departures,
  // too few to predict by; nor is a class with nothing running measured.
  if (tq == nullptr || tq->queued < kEarlyAnswerMinQueued || cq.in_flight == 0) return std::nullopt;
  // Below the best priority in use, the class gets what the tiers above
  // leave, which a recent rate cannot foresee (a surge above it ends and
  // its queue drains at once): no prediction.
  if (config_.classes[klass].engine_priority != top_priority(pools_[pool])) return std::nullopt;
  // The departure rate measures what the class can get only while it has
  // been backlogged for a while (otherwise it is its arrival rate, and a
  // burst after a quiet spell would look hopeless): its oldest request must
  // have waited half its max_queue_wait.
  const Duration wait = config_.classes[klass].max_queue_wait;
  if (cq.oldest_deadline == TimePoint::max() || now - (cq.oldest_deadline - wait) < wait / 2) {
    return std::nullopt;
  }
  // Counted in requests, not tokens: queued costs are estimates (prompt +
  // max_tokens), so a token drain would over-predict the wait. Requests
  // ahead that are cancelled, superseded or expire free the way too.
  const double rate = cq.departed.per_second(now);
  if (rate <= 0) return std::nullopt;
  // The tenant's part of the class's starts: at least its weight share
  // (head_of_class serves a tenant within its share in arrival order), more
  // if it was recently served more.
  const double weight_share = cq.active_weight > tq->weight ? tq->weight / cq.active_weight : 1.0;
  const double total = cq.dispatched.per_second(now);
  const double served_share = total > 0 ? tq->served.per_second(now) / total : 0;
  return (tq->queued + 1.0) / (rate * std::clamp(std::max(weight_share, served_share), 1e-6, 1.0));
}

ApiError Scheduler::queue_full(uint32_t pool, uint32_t klass, const TenantQueue* tq,
                               bool tenant_limit, TimePoint now) const {
  const ClassQueue& cq = pools_[pool].classes[klass];
  const std::string& name = config_.classes[klass].name;
  ApiError error{.code = ErrorCode::kRateLimited,
                 .message = tenant_limit ? "tenant queue for class '" + name + "' is full"
                                         : "queue for class '" + name + "' is full",
                 .param = std::nullopt,
                 .retry_after = std::nullopt};
  if (tenant_limit && tq != nullptr) {
    // The tenant drains at its weight's part of the class rate.
    const double fraction = cq.active_weight > tq->weight ? tq->weight / cq.active_weight : 1.0;
    error.retry_after =
        drain_time(pool, klass, static_cast<double>(tq->queued_cost), fraction, now);
  } else {
    error.retry_after = drain_time(pool, klass, static_cast<double>(cq.queued_cost), 1.0, now);
  }
  return error;
}

ApiError predicted_late(std::string_view klass, double wait_s, double allowed_s,
                        std::chrono::milliseconds min_retry, std::chrono::milliseconds max_retry) {
  // Whole seconds, and no more than a day: a prediction from a near-zero
  // rate must not overflow the text or the clamp below.
  const auto rounded = [](double s) { return std::to_string(static_cast<int64_t>(std::ceil(std::min(s, 86'400.0)))); };
  // Retry once the queue ahead should have drained to what the deadline allows.
  const double retry_ms = std::clamp((wait_s - allowed_s) * 1000, static_cast<double>(min_retry.count()),
                                     static_cast<double>(max_retry.count()));
  const auto retry = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(retry_ms)));
  return ApiError{.code = ErrorCode::kRateLimited,
                  .message = "class '" + std::string(klass) + "' is predicted to wait about " +
                             rounded(wait_s) + " s for a backend, past its " + rounded(allowed_s) +
                             " s limit",
                  .param = std::nullopt,
                  .retry_after = retry};
}

ApiError deadline_error(std::chrono::milliseconds retry_after, WaitReason waited_for) {
  std::string message = "request waited past its class's max_queue_wait";
  if (waited_for != WaitReason::kNone) {
    message += " (waiting for: ";
    message += wait_reason_name(waited_for);
    message += ")";
  }
  return ApiError{.code = ErrorCode::kNoBackend,
                  .message = std::move(message),
                  .param = std::nullopt,
                  .retry_after = retry_after};
}

ApiError no_backend_error(std::chrono::milliseconds retry_after) {
  return ApiError{.code = ErrorCode::kBackendsDown,
                  .message = "no live backend serves this model now (every one is down)",
                  .param = std::nullopt,
                  .retry_after = retry_after};
}

std::chrono::milliseconds Scheduler::expected_drain(PoolId pool, ClassId klass,
                                                    TimePoint now) const {
  return drain_time(pool, klass, static_cast<double>(pools_[pool].classes[klass].queued_cost), 1.0,
                    now);
}

uint32_t Scheduler::queue_depth(PoolId pool, ClassId klass) const {
  return pools_[pool].classes[klass].queued;
}

uint32_t Scheduler::ready_depth(PoolId pool, ClassId klass) const {
  return pools_[pool].classes[klass].ready;
}

WaitReason Scheduler::waits_for(PoolId pool, ClassId klass) const {
  return pools_[pool].classes[klass].blocked;
}

uint32_t Scheduler::class_in_flight(PoolId pool, ClassId klass) const {
  return pools_[pool].classes[klass].in_flight;
}

uint32_t Scheduler::tenant_queue_depth(PoolId pool, ClassId klass, TenantId tenant) const {
  const uint32_t tq = find_tenant_queue(pool, klass, tenant);
  return tq == kNil ? 0 : tenants_[tq].queued;
}

std::vector<TenantDepth> Scheduler::tenant_queue_depths() const {
  std::vector<TenantDepth> depths;
  depths.reserve(tenant_index_.size());
  tenant_index_.for_each([&](uint64_t, uint32_t index) {
    const TenantQueue& tq = tenants_[index];
    depths.push_back(
        {.pool = tq.pool, .klass = tq.klass, .tenant = tq.tenant, .queued = tq.queued});
  });
  return depths;
}

uint32_t Scheduler::class_borrowed(PoolId pool, ClassId klass) const {
  return pools_[pool].classes[klass].borrowed;
}

uint32_t Scheduler::lent(PoolId pool) const { return pools_[pool].lent; }

uint32_t Scheduler::backend_in_flight(PoolId pool, BackendId backend) const {
  return pools_[pool].backends[backend].in_flight;
}

uint32_t Scheduler::backend_over_fair_share(PoolId pool, BackendId backend) const {
  return pools_[pool].backends[backend].excess_taken;
}

uint32_t Scheduler::class_over_fair_share(PoolId pool, ClassId klass) const {
  return pools_[pool].classes[klass].excess;
}

BackendSignal Scheduler::backend_signal(PoolId pool, BackendId backend) const {
  if (pool >= pools_.size() || backend >= pools_[pool].backends.size()) return {};
  return pools_[pool].backends[backend].signal;
}

uint32_t Scheduler::backend_limit(PoolId pool, BackendId backend) const {
  if (pool >= pools_.size() || backend >= pools_[pool].backends.size()) return 0;
  return pools_[pool].backends[backend].limit;
}

double Scheduler::prefill_fill(PoolId pool, BackendId backend, TimePoint now) const {
  if (pool >= pools_.size() || backend >= pools_[pool].backends.size()) return 0;
  const detail::Backend& b = pools_[pool].backends[backend];
  return b.max_backlog > 0 ? std::min(1.0, backlog(b, now) / b.max_backlog) : 0;
}

uint32_t Scheduler::capacity(PoolId pool) const { return pools_[pool].capacity; }

std::size_t Scheduler::tenant_queues() const { return tenant_index_.size(); }

std::optional<ClassId> Scheduler::find_class(std::string_view name) const {
  for (std::size_t c = 0; c < config_.classes.size(); ++c) {
    if (config_.classes[c].name == name) return static_cast<ClassId>(c);
  }
  return std::nullopt;
}

std::optional<PoolId> Scheduler::find_pool(std::string_view name) const {
  for (std::size_t p = 0; p < config_.pools.size(); ++p) {
    if (config_.pools[p].name == name) return static_cast<PoolId>(p);
  }
  return std::nullopt;
}

}  // namespace arbiter::sched
