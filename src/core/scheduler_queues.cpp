// Slabs and queue membership: where a request sits in each state, and the
// counts that follow it. Every move is O(log n) heap work plus O(1) counts.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/scheduler.hpp"

namespace arbiter::sched {

using detail::kNil;
using detail::ticks;

static_assert(FlatIndex::kMissing == kNil);
static_assert(sizeof(detail::Node) <= 144, "Node grew: recheck the bytes-per-request budget");

namespace {

// (pool, class, tenant) packed: pool < 2^24 and class < 2^8 (validated).
uint64_t tenant_key(uint32_t pool, uint32_t klass, TenantId tenant) {
  return (uint64_t{pool} << 40) | (uint64_t{klass} << 32) | tenant;
}

}  // namespace

uint32_t Scheduler::alloc_node() {
  if (free_nodes_ != kNil) {
    const uint32_t id = free_nodes_;
    free_nodes_ = nodes_[id].next;
    nodes_[id].next = kNil;
    return id;
  }
  nodes_.emplace_back();
  nodes_.back().generation = 1;
  return static_cast<uint32_t>(nodes_.size() - 1);
}

void Scheduler::free_node(uint32_t id) {
  Node& n = nodes_[id];
  if (n.key != nullptr) {
    keys_.erase(keys_.find(*n.key));  // by iterator: the key string lives in the entry
    n.key = nullptr;
  }
  n.state = NodeState::kFree;
  if (++n.generation == 0) n.generation = 1;  // 0 would make handle 0 valid
  n.prev = kNil;
  n.next = free_nodes_;
  free_nodes_ = id;
}

Handle Scheduler::handle_of(uint32_t id) const {
  return Handle{(uint64_t{nodes_[id].generation} << 32) | id};
}

uint32_t Scheduler::resolve(Handle handle) const {
  const auto id = static_cast<uint32_t>(handle.value & 0xffffffffu);
  const auto generation = static_cast<uint32_t>(handle.value >> 32);
  if (id >= nodes_.size()) return kNil;
  const Node& n = nodes_[id];
  if (n.generation != generation || n.state == NodeState::kFree) return kNil;
  return id;
}

uint32_t Scheduler::find_tenant_queue(uint32_t pool, uint32_t klass, TenantId tenant) const {
  return tenant_index_.find(tenant_key(pool, klass, tenant));  // kMissing == kNil
}

uint32_t Scheduler::tenant_queue(uint32_t pool, uint32_t klass, TenantId tenant) {
  const uint64_t key = tenant_key(pool, klass, tenant);
  if (const uint32_t found = tenant_index_.find(key); found != kNil) return found;
  uint32_t index = free_tenants_;
  if (index != kNil) {
    free_tenants_ = tenants_[index].next_free;
  } else {
    index = static_cast<uint32_t>(tenants_.size());
    tenants_.emplace_back();
  }
  TenantQueue& tq = tenants_[index];
  tq.tenant = tenant;
  tq.pool = pool;
  tq.klass = klass;
  const auto weight = config_.tenant_weights.find(tenant);
  tq.weight = weight == config_.tenant_weights.end() ? 1.0 : weight->second;
  tq.vtime = pools_[pool].classes[klass].tenant_vclock;
  tq.share_seq = 0;
  tq.queued = 0;
  tq.in_flight = 0;
  tq.queued_cost = 0;
  tq.share_pos = kNoPos;
  tq.served = DecayingRate(detail::kShareWindow);
  // What the other replicas serve it is known from the last exchange, also
  // for a tenant that had no work here then, and charged as if its queue
  // had been here: a flooder's first request on this replica must not go
  // in arrival order until the next exchange.
  const uint32_t remote = remote_index_.find(key);
  tq.remote = remote == FlatIndex::kMissing ? 0 : remote_rates_[remote];
  tq.vtime += tq.remote * remote_seconds_ / tq.weight;
  tq.next_free = kNil;
  tenant_index_.insert(key, index);
  ClassQueue& cq = pools_[pool].classes[klass];
  cq.busy_weight += tq.weight;
  ++cq.busy_tenants;
  return index;
}

bool Scheduler::live(uint32_t tq) const {
  const TenantQueue& t = tenants_[tq];
  return find_tenant_queue(t.pool, t.klass, t.tenant) == tq;
}

std::vector<ServiceRate> Scheduler::local_service(TimePoint now) const {
  // Only this replica's own service (`served`, never `remote`): what the
  // others add up must not come back to them.
  std::vector<ServiceRate> out;
  for (uint32_t i = 0; i < tenants_.size(); ++i) {
    if (!live(i)) continue;
    const TenantQueue& t = tenants_[i];
    if (const double rate = t.served.per_second(now); rate > 0) {
      out.push_back({.pool = t.pool, .klass = t.klass, .tenant = t.tenant, .per_second = rate});
    }
  }
  return out;
}

void Scheduler::set_remote_service(const std::vector<ServiceRate>& rates, Duration interval) {
  for (Pool& pool : pools_) {
    for (ClassQueue& cq : pool.classes) cq.remote = 0;
  }
  for (uint32_t i = 0; i < tenants_.size(); ++i) {
    if (live(i)) tenants_[i].remote = 0;
  }
  remote_index_.clear();
  remote_rates_.clear();
  const double seconds = std::chrono::duration<double>(interval).count();
  remote_seconds_ = seconds;
  for (const ServiceRate& r : rates) {
    // Figures come from other processes through Redis: one that is not a
    // finite positive rate would make a tenant's virtual time infinite.
    if (r.pool >= pools_.size() || r.klass >= config_.classes.size() || !(r.per_second > 0) ||
        !std::isfinite(r.per_second)) {
      continue;
    }
    ClassQueue& cq = pools_[r.pool].classes[r.klass];
    cq.remote += r.per_second;
    const uint64_t key = tenant_key(r.pool, r.klass, r.tenant);
    if (const uint32_t at = remote_index_.find(key); at != FlatIndex::kMissing) {
      remote_rates_[at] += r.per_second;
    } else {
      remote_index_.insert(key, static_cast<uint32_t>(remote_rates_.size()));
      remote_rates_.push_back(r.per_second);
    }
    const uint32_t tq = find_tenant_queue(r.pool, r.klass, r.tenant);
    // No work here: it starts at the class's clock when it has some, with
    // this rate (tenant_queue).
    if (tq == kNil) continue;
    TenantQueue& t = tenants_[tq];
    t.remote += r.per_second;
    // Served elsewhere from the same engines: it counts in fair queueing
    // as if served here.
    t.vtime += r.per_second * seconds / t.weight;
    if (t.share_pos != kNoPos) cq.tenants.rekey(t.share_pos, {t.vtime, t.share_seq}, share_pos());
  }
}

void Scheduler::maybe_free_tenant(uint32_t tq) {
  TenantQueue& t = tenants_[tq];
  if (t.queued != 0 || t.in_flight != 0) return;
  tenant_index_.erase(tenant_key(t.pool, t.klass, t.tenant));
  ClassQueue& cq = pools_[t.pool].classes[t.klass];
  cq.busy_weight = --cq.busy_tenants == 0 ? 0 : cq.busy_weight - t.weight;
  t.next_free = free_tenants_;
  free_tenants_ = tq;
}

int64_t Scheduler::order_key(const Node& n) const {
  const int64_t deadline = ticks(n.deadline);
  if (!n.hinted) return deadline;
  // slo_at is arrival + hint; the class's requests are at arrival +
  // max_queue_wait, their TTFT target (class_ttft_target) that much
  // earlier: the hint is placed on the same scale. min: the deadline (the
  // class's, or the client's own where tighter) still holds. Saturating: a
  // class without a queue deadline has none to shift by.
  const ClassPolicy& cls = config_.classes[n.klass];
  const Duration shift = cls.ttft_slo > Duration::zero() ? cls.max_queue_wait - cls.ttft_slo : Duration::zero();
  const int64_t slo = ticks(n.slo_at);
  const int64_t shift_ticks = shift.count();
  const bool overflows = shift_ticks > 0 && slo > INT64_MAX - shift_ticks;  // slo_at is a time, never near the minimum
  return std::min(deadline, overflows ? INT64_MAX : slo + shift_ticks);
}

void Scheduler::make_ready(uint32_t id) {
  Node& n = nodes_[id];
  Pool& pool = pools_[n.pool];
  ClassQueue& cq = pool.classes[n.klass];
  n.state = NodeState::kQueued;
  ++cq.ready;
  const OrderKey by_arrival{0, n.seq};
  switch (config_.policy) {
    case Policy::kFifo:
      pool.fifo.push(by_arrival, id, order_pos());
      return;
    case Policy::kPriority:
      cq.order.push(by_arrival, id, order_pos());
      return;
    case Policy::kHybrid:
      break;
  }
  // A class or tenant that was idle starts at the current virtual clock, so
  // idleness does not bank credit (start-time fair queueing).
  if (cq.ready == 1) cq.vtime = std::max(cq.vtime, pool.class_vclock);
  TenantQueue& tq = tenants_[n.tenant];
  tq.queue.push({order_key(n), n.seq}, id, order_pos());
  if (tq.share_pos == kNoPos) {
    tq.vtime = std::max(tq.vtime, cq.tenant_vclock);
    tq.share_seq = next_share_seq_++;
    cq.tenants.push({tq.vtime, tq.share_seq}, n.tenant, share_pos());
    cq.active_weight += tq.weight;
  }
  if (n.expires && !n.linked && !config_.classes[n.klass].background) {
    // Urgent once less than aging_fraction of its allowed wait is left.
    // (Requests with the class deadline are aged through the arrival list.)
    const auto left = std::chrono::duration_cast<Duration>((n.deadline - n.queued_since) *
                                                           config_.aging_fraction);
    cq.urgent.push({ticks(n.deadline - left), n.seq}, id, urgent_pos());
  }
}

void Scheduler::remove_ready(uint32_t id) {
  Node& n = nodes_[id];
  Pool& pool = pools_[n.pool];
  ClassQueue& cq = pool.classes[n.klass];
  --cq.ready;
  switch (config_.policy) {
    case Policy::kFifo:
      pool.fifo.erase(n.order_pos, order_pos());
      return;
    case Policy::kPriority:
      cq.order.erase(n.order_pos, order_pos());
      return;
    case Policy::kHybrid:
      break;
  }
  TenantQueue& tq = tenants_[n.tenant];
  tq.queue.erase(n.order_pos, order_pos());
  if (tq.queue.empty()) {
    cq.tenants.erase(tq.share_pos, share_pos());
    // Reset to exactly 0 when no tenant is left, so float drift never builds up.
    cq.active_weight = cq.tenants.empty() ? 0 : cq.active_weight - tq.weight;
  }
  if (n.urgent_pos != kNoPos) cq.urgent.erase(n.urgent_pos, urgent_pos());
}

void Scheduler::leave_queue(uint32_t id, TimePoint at) {
  Node& n = nodes_[id];
  if (n.state == NodeState::kHeld) {
    held_.erase(n.order_pos, order_pos());
  } else {
    remove_ready(id);
  }
  untrack_deadline(id);
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  TenantQueue& tq = tenants_[n.tenant];
  --cq.queued;
  cq.queued_cost -= n.cost;
  --tq.queued;
  tq.queued_cost -= n.cost;
  --queued_;
  cq.departed.add(at, 1);
}

void Scheduler::drop_queued(uint32_t id) {
  // Cancels carry no time: the last poll's is close enough for a rate.
  leave_queue(id, last_poll_);
  const uint32_t tenant = nodes_[id].tenant;
  free_node(id);
  maybe_free_tenant(tenant);
}

void Scheduler::list_append(uint32_t& head, uint32_t& tail, uint32_t id) {
  Node& n = nodes_[id];
  n.prev = tail;
  n.next = kNil;
  (tail == kNil ? head : nodes_[tail].next) = id;
  tail = id;
  n.linked = true;
}

void Scheduler::list_remove(uint32_t& head, uint32_t& tail, uint32_t id) {
  Node& n = nodes_[id];
  (n.prev == kNil ? head : nodes_[n.prev].next) = n.next;
  (n.next == kNil ? tail : nodes_[n.next].prev) = n.prev;
  n.prev = kNil;
  n.next = kNil;
  n.linked = false;
}

void Scheduler::unlink_victim(uint32_t id) {
  Node& n = nodes_[id];
  if (!n.linked) return;
  if (n.run_pool != n.pool) {
    Pool& lender = pools_[n.run_pool];
    list_remove(lender.borrowed_head, lender.borrowed_tail, id);
    return;
  }
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  list_remove(cq.victims_head, cq.victims_tail, id);
}

void Scheduler::track_deadline(uint32_t id, TimePoint class_deadline) {
  Node& n = nodes_[id];
  if (!n.expires) return;
  // Enqueue times do not go backwards, so appending keeps the list in
  // deadline order; a caller whose clock did go back gets the heap instead.
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  if (n.deadline != class_deadline ||
      (cq.arrivals_tail != kNil && nodes_[cq.arrivals_tail].deadline > n.deadline)) {
    expiry_.push({ticks(n.deadline), n.seq}, id, expiry_pos());
    return;
  }
  if (cq.arrivals_head == kNil) cq.oldest_deadline = n.deadline;
  list_append(cq.arrivals_head, cq.arrivals_tail, id);
}

void Scheduler::untrack_deadline(uint32_t id) {
  Node& n = nodes_[id];
  if (n.expiry_pos != kNoPos) {
    expiry_.erase(n.expiry_pos, expiry_pos());
    return;
  }
  if (!n.linked) return;
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  list_remove(cq.arrivals_head, cq.arrivals_tail, id);
  cq.oldest_deadline =
      cq.arrivals_head == kNil ? TimePoint::max() : nodes_[cq.arrivals_head].deadline;
}

void Scheduler::release_slot(uint32_t id) {
  Node& n = nodes_[id];
  Pool& run = pools_[n.run_pool];
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  const bool borrowed = n.run_pool != n.pool;
  run.backends[n.backend].in_flight -= n.slots;
  if (n.adapter != 0) lora_released(run.backends[n.backend], n);
  if (n.extra_slot) run.backends[n.backend].extra_taken -= n.slots;
  if (n.excess_slot) {
    run.backends[n.backend].excess_taken -= n.slots;
    cq.excess -= n.slots;
    run.excess -= n.slots;
  }
  n.extra_slot = n.excess_slot = false;
  prefilled(n);
  cq.in_flight -= n.slots;
  tenants_[n.tenant].in_flight -= n.slots;
  count_running(n.pool, tenants_[n.tenant].tenant, -static_cast<int32_t>(n.slots));
  --in_flight_;
  if (borrowed) {
    cq.borrowed -= n.slots;
    run.lent -= n.slots;
  }
  switch (n.state) {
    case NodeState::kPreempting:
      if (!borrowed) cq.preempting -= n.slots;
      run.preempting -= n.slots;
      break;
    case NodeState::kAborting:
      if (!borrowed) cq.aborting -= n.slots;
      run.aborting -= n.slots;
      break;
    default:
      unlink_victim(id);
      break;
  }
  n.run_pool = n.pool;
}

void Scheduler::prefilled(Node& n) {
  if (!n.prefilling) return;
  n.prefilling = false;
  detail::Backend& b = pools_[n.run_pool].backends[n.backend];
  b.pending = std::max(0.0, b.pending - uncached_prompt(n));
}

void Scheduler::retire(uint32_t id) {
  release_slot(id);
  const uint32_t tenant = nodes_[id].tenant;
  free_node(id);
  maybe_free_tenant(tenant);
}

void Scheduler::serve(uint32_t id, double tokens, TimePoint now) {
  charge(id, tokens);
  const Node& n = nodes_[id];
  pools_[n.pool].classes[n.klass].dispatched.add(now, tokens);
  tenants_[n.tenant].served.add(now, tokens);
}

void Scheduler::charge(uint32_t id, double tokens) {
  const Node& n = nodes_[id];
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  TenantQueue& tq = tenants_[n.tenant];
  cq.vtime += tokens / config_.classes[n.klass].weight;
  tq.vtime += tokens / tq.weight;
  if (tq.share_pos != kNoPos) {
    cq.tenants.rekey(tq.share_pos, {tq.vtime, tq.share_seq}, share_pos());
  }
}

}  // namespace arbiter::sched
