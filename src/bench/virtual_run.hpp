// Virtual mode: one policy's run of a scenario as a discrete-event
// simulation in virtual time. Requests come from the Workload; the gateway
// is the real sched::Scheduler (fifo, priority or hybrid), the engines are
// engine::Engine models; `direct` sends each request straight to an engine
// (its own FIFO decides). No sockets, no threads, no wall clock: the same
// scenario and seed give the same results.
#pragma once

#include <string_view>

#include "bench/results.hpp"
#include "bench/scenario.hpp"
#include "core/scheduler_config.hpp"

namespace arbiter::bench {

// The scheduler config the modelled gateway runs: one pool of the scenario's
// engines (max_concurrency slots each), the scenario's classes and tenant weights.
sched::SchedulerConfig scheduler_config(const Scenario& scenario, sched::Policy policy);

// `policy`: one of is_policy_name()'s (scenario.hpp). Events are processed in
// time order until every request has ended or duration_s + drain_s passed.
PolicySummary run_virtual(const Scenario& scenario, std::string_view policy, uint64_t seed);

}  // namespace arbiter::bench
