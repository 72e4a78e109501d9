// LoRA-aware routing: a request for an adapter runs only on a backend that
// serves it, preferably one whose engine has it loaded. An engine runs
// requests of at most max_loras adapters at once (vLLM --max-loras); a
// request whose adapter finds no free GPU slot waits in the engine while
// other adapters' requests pass it, and loading one costs time. The
// scheduler's picture of each engine's slots is what it sent there: each
// adapter with requests running, and the most recently used idle ones, up to
// max_loras (vLLM evicts the least recently used idle adapter).
#include <algorithm>
#include <tuple>

#include "core/scheduler.hpp"
#include "core/scheduler_bound.hpp"

namespace arbiter::sched {

using detail::kNil;
using detail::kNoAvoid;

bool Scheduler::lora_urgent(const Node& n, TimePoint now) const {
  return n.deadline != TimePoint::max() && now >= n.deadline - aging_lead_[n.klass];
}

bool Scheduler::serves(const detail::Backend& b, uint16_t adapter) {
  return std::binary_search(b.adapters.begin(), b.adapters.end(), adapter);
}

void Scheduler::lora_started(detail::Backend& b, Node& n, Placement placement) {
  const uint64_t now = next_start_seq_;  // start() just took a dispatch number: a clock of uses
  n.lora_swap = placement == Placement::kAdapterWait;
  for (detail::Backend::Lora& l : b.loras) {
    if (l.adapter == n.adapter) {
      ++l.running;
      l.swapping += n.lora_swap ? 1 : 0;
      l.last_used = now;
      return;
    }
  }
  if (b.loras.size() >= b.max_loras) {
    // The engine loads it in place of the least recently used idle one;
    // with every slot busy it waits there for one, and is counted as
    // loaded from now on as the engine will have it.
    auto idle = b.loras.end();
    for (auto it = b.loras.begin(); it != b.loras.end(); ++it) {
      if (it->running == 0 && (idle == b.loras.end() || it->last_used < idle->last_used)) idle = it;
    }
    if (idle != b.loras.end()) b.loras.erase(idle);
  }
  b.loras.push_back({.adapter = n.adapter, .running = 1, .last_used = now, .swapping = n.lora_swap ? 1u : 0u});
}

void Scheduler::lora_swapped(detail::Backend& b, Node& n) {
  n.lora_swap = false;
  for (detail::Backend::Lora& l : b.loras) {
    if (l.adapter == n.adapter && l.swapping > 0) --l.swapping;
  }
}

void Scheduler::lora_released(detail::Backend& b, Node& n) {
  if (n.lora_swap) lora_swapped(b, n);
  for (auto it = b.loras.begin(); it != b.loras.end(); ++it) {
    if (it->adapter != n.adapter) continue;
    --it->running;
    // Over max_loras only while more adapters ran than the engine has
    // slots: the engine has dropped one of them by now.
    if (it->running == 0 && b.loras.size() > b.max_loras) b.loras.erase(it);
    return;
  }
}

std::pair<uint32_t, Scheduler::Routed> Scheduler::lora_alternative(const Pool& pool, uint32_t tq, uint32_t head,
                                                                   TimePoint now, double fraction, uint32_t least,
                                                                   SlotPass pass) const {
  // The heap's first entries are its most urgent (level order): a bounded
  // look keeps the poll's cost independent of the queue's length (64 x the
  // pool's backends at most, once a poll per tenant whose head waits). 16
  // was too short a look where adapters outnumber the engines' slots: the
  // engines stood idle while placeable requests sat deeper in the queue
  // (docs/benchmarks.md, "LoRA adapters").
  constexpr uint32_t kLookahead = 64;
  const auto& queue = tenants_[tq].queue;
  uint32_t best = kNil;
  Routed where{.backend = kNil};
  for (uint32_t pos = 0; pos < std::min<std::size_t>(queue.size(), kLookahead); ++pos) {
    const uint32_t id = queue.at(pos).id;
    // The head's adapter found no backend: nor would its other requests.
    if (id == head || nodes_[id].adapter == nodes_[head].adapter ||
        (best != kNil && !(queue.at(pos).key < queue.at(nodes_[best].order_pos).key))) {
      continue;
    }
    const Routed r = route(pool, nodes_[id], now, fraction, least, pass);
    if (r.backend == kNil) continue;
    best = id;
    where = r;
  }
  return {best, where};
}

Scheduler::Routed Scheduler::route_lora(const Pool& pool, const Node& n, TimePoint now, double fraction,
                                        SlotPass pass, bool avoid) const {
  // A backend whose engine drains a slot for another adapter's request
  // (a pending swap) takes no new work of the adapters it has loaded: it
  // would keep the slot busy and the waiting request waiting (vLLM passes
  // it over while they run). A request for the adapter being swapped in
  // joins it there; one for another adapter goes there last.
  enum Tier { kDrained, kWait, kJoin, kOverBound, kLoad, kLoaded };
  const double bound = config_.lora_affinity ? affinity_bound(pool, n, pass) : 0;
  const auto tier = [&](const detail::Backend& b) {
    if (!config_.lora_affinity) return kWait;
    uint32_t busy = 0;
    bool loaded = false, swapping_other = false, swapping_own = false;
    for (const detail::Backend::Lora& l : b.loras) {
      const bool own = l.adapter == n.adapter;
      loaded |= own;
      busy += l.running > 0 ? 1 : 0;
      swapping_own |= own && l.swapping > 0;
      swapping_other |= !own && l.swapping > 0;
    }
    if (swapping_own) return kJoin;
    if (swapping_other) return kDrained;
    const bool within = within_affinity_bound(affinity_load(b) + n.slots, bound, b.slots(pass));
    if (loaded) return within ? kLoaded : busy < b.max_loras ? kLoad : kOverBound;
    return busy < b.max_loras ? kLoad : kWait;
  };
  // The best tier, then the most room relative to its slots; the scan
  // starts after the last pick, so ties rotate. A retry avoids the backend
  // whose run failed while another that serves the adapter is up.
  const auto pick = [&](uint32_t exclude) {
    const auto count = static_cast<uint32_t>(pool.backends.size());
    uint32_t best = kNil;
    Tier best_tier = kWait;
    for (uint32_t k = 0, i = pool.next_backend; k < count; ++k, i = i + 1 == count ? 0 : i + 1) {
      const detail::Backend& b = pool.backends[i];
      if (i == exclude || !serves(b, n.adapter) || !open_to(b, now, fraction, pass)) continue;
      const Tier t = tier(b);
      const detail::Backend* c = best == kNil ? nullptr : &pool.backends[best];
      if (c == nullptr || t > best_tier ||
          (t == best_tier && uint64_t{b.used(pass)} * c->slots(pass) < uint64_t{c->used(pass)} * b.slots(pass))) {
        best = i;
        best_tier = t;
      }
    }
    return std::pair{best, best_tier};
  };
  const bool avoiding = avoid && n.avoid != kNoAvoid;
  auto [best, best_tier] = pick(avoiding ? n.avoid : kNil);
  if (best == kNil && avoiding) {
    for (uint32_t b = 0; b < pool.backends.size(); ++b) {
      if (b != n.avoid && serves(pool.backends[b], n.adapter) && !pool.backends[b].signal.down) return {.backend = kNil};
    }
    std::tie(best, best_tier) = pick(kNil);
  }
  if (best == kNil) return {.backend = kNil};
  // A request that would wait in the engine for an adapter slot waits here
  // instead, where it holds no engine slot and other requests can pass it
  // (lora_alternative), until an engine has its adapter loaded or a slot
  // free; once it is urgent (in its class's aging lead, the last
  // aging_fraction of its allowed wait) it goes, and its engine drains a
  // slot for it (kDrained above). Not at TTFT risk: that comes within a
  // second or two, and sending those drains every engine for the cold
  // adapters (docs/benchmarks.md, "LoRA adapters").
  if (config_.lora_affinity && best_tier <= kWait && !lora_urgent(n, now)) return {.backend = kNil};
  const Placement placement = !config_.lora_affinity ? Placement::kLeastLoaded
                              : best_tier == kLoaded ? Placement::kAdapterLoaded
                              : best_tier == kLoad   ? Placement::kAdapterLoad
                              : best_tier == kJoin || best_tier == kOverBound ? Placement::kAdapterLoaded
                                                     : Placement::kAdapterWait;
  return {.backend = best, .placement = avoiding && best != n.avoid ? Placement::kAvoidFailed : placement};
}

}  // namespace arbiter::sched
