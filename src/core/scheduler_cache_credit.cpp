// Prefix cache credit (issue 12; SchedulerConfig::affinity_cache_credit):
// what a prefix the chosen backend already holds means for its prefill
// backlog and for the engine signal that would turn the request away.
#include <algorithm>

#include "core/prefix_blocks.hpp"
#include "core/scheduler.hpp"

namespace arbiter::sched {

uint16_t Scheduler::cached_blocks(const Pool& pool, uint32_t backend, const Node& n) const {
  // The prefix index's deepest match, when `backend` is among its holders
  // and has no prompt of ours still waiting for its first token: the index
  // records a prefix at dispatch, the engine caches it once computed, and
  // a second request credited while the first is prefilling computes the
  // same blocks again (credited then, the completion pools' P99 TTFT was
  // 10-20% worse and the regret sweep lost 77 scenarios instead of 68).
  if (n.prefix_len == 0 || !pool.prefix.enabled() || pool.backends[backend].pending >= 1) return 0;
  const PrefixIndex::Match match = pool.prefix.longest({n.prefix, n.prefix_len});
  const auto holders = match.backends.begin() + match.count;
  if (std::find(match.backends.begin(), holders, backend) == holders) return 0;
  return static_cast<uint16_t>(std::min<uint32_t>(match.depth, UINT16_MAX));
}

double Scheduler::uncached_prompt(const Node& n) {
  // What the request adds to its backend's prefill backlog: its prompt less
  // the prefix credited at dispatch (none without affinity_cache_credit).
  const double held = static_cast<double>(n.cached_blocks) * kPrefixBlockTokens;
  return std::max(0.0, static_cast<double>(n.prompt) - held);
}

bool Scheduler::holder_despite_signal(const detail::Backend& b, TimePoint now, double fraction,
                                      SlotPass pass) const {
  // A holder of the request's prefix whose only objection is a fresh
  // `saturated` verdict (max_waiting is 0 by default: any request waiting
  // for the engine's next step at scrape time) still takes it, when its
  // slots and prefill backlog allow (route() adds the affinity load bound):
  // the prefix would otherwise be prefilled again on a cold engine.
  return config_.affinity_cache_credit && !b.signal.down && b.signal.saturated && !b.signal.stale &&
         b.used(pass) < b.slots(pass) && !backlog_full(b, now, fraction);
}

}  // namespace arbiter::sched
