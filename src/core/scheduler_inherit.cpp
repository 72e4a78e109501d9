// Typing through: a superseding request takes over the running generation of
// the request it replaced (Scheduler::inherit, docs/scheduler.md).
#include "core/scheduler.hpp"

namespace arbiter::sched {

using detail::kNil;
using detail::NodeState;

bool Scheduler::inherit(Handle heir_handle, Handle old_handle, TimePoint now) {
  const uint32_t id = resolve(heir_handle);
  const uint32_t old = resolve(old_handle);
  if (id == kNil || old == kNil || id == old) return false;
  Node& n = nodes_[id];
  Node& o = nodes_[old];
  // Same tenant queue: same pool, class and tenant.
  if ((n.state != NodeState::kHeld && n.state != NodeState::kQueued) ||
      o.state != NodeState::kAborting || n.tenant != o.tenant || n.slots != o.slots || n.adapter != o.adapter ||
      !config_.classes[n.klass].typing_through) {
    return false;
  }
  // The heir leaves the queue as if dispatched...
  leave_queue(id, now);
  ClassQueue& cq = pools_[n.pool].classes[n.klass];
  // ...onto the old request's slot, which stays counted where it is
  // (backend, class, tenant, borrowed): only its aborting mark goes.
  Pool& run = pools_[o.run_pool];
  if (o.run_pool == o.pool) cq.aborting -= o.slots;
  run.aborting -= o.slots;
  n.state = NodeState::kInFlight;
  n.run_pool = o.run_pool;
  n.backend = o.backend;
  n.start_seq = next_start_seq_++;
  n.prompt = o.prompt;
  n.prefilling = o.prefilling;  // a prompt still prefilling stays in the backlog once
  n.extra_slot = o.extra_slot;  // the slot it holds (heirs are of the old request's class)
  n.excess_slot = o.excess_slot;
  n.charged = o.charged;        // complete() corrects against what was charged
  n.expires = false;
  n.preemptions = o.preemptions;
  o.prefilling = false;
  ++counters_.classes[n.klass].typed_through;
  free_node(old);  // its slot now belongs to the heir
  return true;
}

}  // namespace arbiter::sched
