// Tenants inside a class (hybrid): who is over its share, who floods, and
// which request the class serves next. Shares are of the class's recent
// service (tokens dispatched, kShareWindow), other replicas' included.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/scheduler.hpp"

namespace arbiter::sched {

using detail::kFloodSearch;
using detail::kFlooding;
using detail::kNil;
using detail::kOveruse;

namespace {

// (pool, tenant) packed for tenant_running_: pool < 2^24 (validated).
uint64_t pool_tenant_key(uint32_t pool, TenantId tenant) { return (uint64_t{pool} << 32) | tenant; }

// The heap key of a deferred tenant queue: after every other.
constexpr double kDeferred = std::numeric_limits<double>::infinity();

// Served beyond `multiple` times its share `fair` of `total`, or beyond
// halfway from that share to all of it (with two tenants, 75% rather than
// 100%). A tenant alone in its class (fair 1) is never beyond its share.
bool beyond_share(double served, double total, double fair, double multiple) {
  if (total <= 0 || fair >= 1) return false;
  return served > total * std::min(multiple * fair, (1 + fair) / 2);
}

}  // namespace

bool Scheduler::overusing(uint32_t tq, TimePoint now) const {
  // Against its weight's share among the tenants with ready work.
  const TenantQueue& t = tenants_[tq];
  const ClassQueue& cq = pools_[t.pool].classes[t.klass];
  if (cq.active_weight <= 0) return false;
  return beyond_share(t.served.per_second(now) + t.remote, cq.dispatched.per_second(now) + cq.remote,
                      t.weight / cq.active_weight, kOveruse);
}

bool Scheduler::flooding(uint32_t tq, TimePoint now) const {
  // Against its weight's share among the tenants with work queued or
  // running: a tenant whose requests all start at once is still there, so
  // a flooder cannot look fair because the others never have to queue.
  // Only with tenant_headroom: off, no tenant is told apart as flooding.
  if (config_.tenant_headroom <= 0) return false;
  const TenantQueue& t = tenants_[tq];
  const ClassQueue& cq = pools_[t.pool].classes[t.klass];
  if (cq.busy_weight <= 0) return false;
  return beyond_share(t.served.per_second(now) + t.remote, cq.dispatched.per_second(now) + cq.remote,
                      t.weight / cq.busy_weight, kFlooding);
}

uint32_t Scheduler::fairest_not_flooding(const ClassQueue& cq, TimePoint now) const {
  // Best-first over the tenant heap: the least virtual time among tenants
  // that do not flood. A flooding entry's children are looked at in its
  // place; at most kFloodSearch entries, else the fairest as it is.
  const auto& heap = cq.tenants;
  uint32_t frontier[kFloodSearch * 4 + 1];
  uint32_t size = 0;
  frontier[size++] = 0;
  for (uint32_t looked = 0; size > 0 && looked < kFloodSearch; ++looked) {
    uint32_t* best = std::min_element(frontier, frontier + size, [&](uint32_t a, uint32_t b) {
      return heap.at(a).key < heap.at(b).key;
    });
    const uint32_t pos = *best;
    *best = frontier[--size];
    // Deferred tenants (at a cap this poll) sort last: none of them, nor
    // anything after them, may be picked.
    if (heap.at(pos).key.vtime == kDeferred) break;
    if (!flooding(heap.at(pos).id, now)) return heap.at(pos).id;
    const auto first = static_cast<std::size_t>(4 * pos + 1);
    for (std::size_t c = first; c < std::min(first + 4, heap.size()); ++c) {
      frontier[size++] = static_cast<uint32_t>(c);
    }
  }
  return heap.top().id;
}

uint32_t Scheduler::head_of_class(uint32_t pool, uint32_t klass, TimePoint now) {
  // Earliest deadline first among tenants within their share: the class's
  // oldest request (its deadline is the class's) goes first if its order_key
  // is earlier than the fair tenant's head and its tenant was not recently
  // served beyond its share (overusing(), flooding()). Otherwise the tenant
  // with the least virtual time, then its earliest deadline, passing over
  // flooding tenants while one that does not flood has work: a flooding
  // tenant gets its share and what the others leave, and the others are
  // served as if it were not there. Strict fair queueing between tenants of
  // nearly equal demand costs goodput for nothing: the slightly busier one
  // waits longer and misses SLOs that arrival order would have met (arrival
  // order: issue 11's sweep).
  // A tenant at its cap was deferred (defer_tenant): it is last in the
  // heap, and its oldest request does not go first either.
  ClassQueue& cq = pools_[pool].classes[klass];
  const uint32_t fairest = fairest_not_flooding(cq, now);
  cq.tenant_vclock = std::max(cq.tenant_vclock, tenants_[cq.tenants.top().id].vtime);
  const uint32_t fair = tenants_[fairest].queue.top().id;
  uint32_t oldest = cq.arrivals_head;
  if (oldest != kNil && nodes_[oldest].state == NodeState::kQueued) {
    // Inside a tenant, earliest deadline first: where a TTFT hint is
    // involved, the tenant's first request by order_key takes the oldest's
    // turn (without hints the oldest keeps it, as it always did).
    const uint32_t first = tenants_[nodes_[oldest].tenant].queue.top().id;
    if (nodes_[first].hinted || nodes_[oldest].hinted) oldest = first;
  }
  if (oldest != kNil && oldest != fair && nodes_[oldest].state == NodeState::kQueued &&
      std::pair(order_key(nodes_[oldest]), nodes_[oldest].seq) <
          std::pair(order_key(nodes_[fair]), nodes_[fair].seq) &&
      !overusing(nodes_[oldest].tenant, now) && !flooding(nodes_[oldest].tenant, now) &&
      !tenant_capped(nodes_[oldest].tenant) && !tenants_[nodes_[oldest].tenant].deferred) {
    return oldest;
  }
  return fair;
}

bool Scheduler::keeps_tenant_headroom(const Pool& pool, const Node& n, TimePoint now) const {
  // The pool's last tenant_headroom of its slots are for tenants that do
  // not flood, so their next request starts at once instead of waiting for
  // a flooder's request to end. A class below its min_share is not held:
  // its guarantee is against the other classes, whoever its tenant is.
  // O(B) with tenant_headroom on, else O(1).
  if (config_.tenant_headroom <= 0 ||
      detail::share_deficit(config_.classes[n.klass].min_share, pool.classes[n.klass], pool.capacity) > 0) {
    return false;
  }
  uint32_t free = 0;
  for (const detail::Backend& b : pool.backends) {
    if (!b.signal.down && b.used(SlotPass::kLimit) < b.limit) free += b.limit - b.used(SlotPass::kLimit);
  }
  const double headroom = std::ceil(config_.tenant_headroom * pool.capacity);
  return free <= headroom && flooding(n.tenant, now);
}


bool Scheduler::has_tenant_cap(TenantId tenant) const {
  // No lookup at all without caps configured.
  return (!config_.tenant_max_running.empty() && config_.tenant_max_running.contains(tenant)) ||
         (!config_.tenant_max_share.empty() && config_.tenant_max_share.contains(tenant));
}

bool Scheduler::at_tenant_cap(uint32_t pool, TenantId tenant) const {
  // One lookup per cap map (none while it is empty); no cap: never at it.
  double cap = std::numeric_limits<double>::infinity();
  if (!config_.tenant_max_running.empty()) {
    if (const auto it = config_.tenant_max_running.find(tenant); it != config_.tenant_max_running.end() && it->second > 0) {
      cap = it->second;
    }
  }
  if (!config_.tenant_max_share.empty()) {
    if (const auto it = config_.tenant_max_share.find(tenant); it != config_.tenant_max_share.end()) {
      cap = std::min(cap, std::floor(std::max(1.0, it->second * pools_[pool].capacity)));
    }
  }
  if (cap == std::numeric_limits<double>::infinity()) return false;
  const uint32_t running = tenant_running_.find(pool_tenant_key(pool, tenant));
  return running != FlatIndex::kMissing && running >= cap;
}

bool Scheduler::tenant_capped(uint32_t tq) const {
  const TenantQueue& t = tenants_[tq];
  if (at_tenant_cap(t.pool, t.tenant)) return true;
  // The fair-share cap: busy_weight counts this tenant too, so one alone in
  // its class (or beside idle ones) is never capped. Only a tenant whose
  // demand (queued and running) is beyond kFlooding times its share of the
  // class's is held to it: a demand share does not fall when the cap holds
  // the tenant back (its queue grows), where a service share would, and
  // tenants of equal weight in a surge are not capped for a momentary excess.
  if (config_.tenant_fair_cap <= 0) return false;
  const Pool& pool = pools_[t.pool];
  const ClassQueue& cq = pool.classes[t.klass];
  if (cq.busy_weight <= t.weight * (1 + 1e-9)) return false;
  const double share = t.weight / cq.busy_weight;
  const double cap = std::max(1.0, std::floor(config_.tenant_fair_cap * share * pool.capacity));
  return t.in_flight >= cap &&
         beyond_share(t.queued + t.in_flight, cq.queued + cq.in_flight, share, kFlooding);
}

void Scheduler::count_running(uint32_t pool, TenantId tenant, int32_t slots) {
  // Only tenants with a cap are counted.
  if (!has_tenant_cap(tenant)) return;
  const uint64_t key = pool_tenant_key(pool, tenant);
  const uint32_t found = tenant_running_.find(key);
  const int64_t running = (found == FlatIndex::kMissing ? 0 : found) + int64_t{slots};
  if (found != FlatIndex::kMissing) tenant_running_.erase(key);
  if (running > 0) tenant_running_.insert(key, static_cast<uint32_t>(running));
}

void Scheduler::defer_tenant(uint32_t tq) {
  TenantQueue& t = tenants_[tq];
  pools_[t.pool].classes[t.klass].tenants.rekey(t.share_pos, {kDeferred, t.share_seq}, share_pos());
  t.deferred = true;
  deferred_.push_back(tq);
}

void Scheduler::open_excess(uint32_t pool, uint32_t klass) {
  ClassQueue& cq = pools_[pool].classes[klass];
  if (cq.excess_open == polls_) return;  // once a poll: its excess found no slot
  cq.excess_open = polls_;
  std::erase_if(deferred_, [&](uint32_t tq) {
    TenantQueue& t = tenants_[tq];
    if (t.pool != pool || t.klass != klass || t.share_pos == kNoPos || at_tenant_cap(t.pool, t.tenant)) return false;
    cq.tenants.rekey(t.share_pos, {t.vtime, t.share_seq}, share_pos());
    t.deferred = false;
    return true;
  });
}

void Scheduler::restore_deferred() {
  // A deferred queue whose last ready request left during the poll (it
  // cannot start, but it may expire or be cancelled) is out of the heap.
  for (const uint32_t tq : deferred_) {
    TenantQueue& t = tenants_[tq];
    t.deferred = false;
    if (t.share_pos == kNoPos) continue;
    pools_[t.pool].classes[t.klass].tenants.rekey(t.share_pos, {t.vtime, t.share_seq}, share_pos());
  }
  deferred_.clear();
}

uint32_t Scheduler::capped_ready(const ClassQueue& cq) const {
  // O(tenants with ready work in the class), and only with caps an operator
  // set: a tenant over its fair-share cap may take a freed slot as excess.
  if (config_.tenant_max_running.empty() && config_.tenant_max_share.empty()) return 0;
  uint32_t capped = 0;
  for (uint32_t pos = 0; pos < cq.tenants.size(); ++pos) {
    const TenantQueue& t = tenants_[cq.tenants.at(pos).id];
    if (at_tenant_cap(t.pool, t.tenant)) capped += static_cast<uint32_t>(t.queue.size());
  }
  return capped;
}

bool Scheduler::deferred_top(const ClassQueue& cq) {
  return !cq.tenants.empty() && cq.tenants.top().key.vtime == kDeferred;
}

}  // namespace arbiter::sched
