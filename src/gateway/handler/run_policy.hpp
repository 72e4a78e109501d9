// What follows one upstream run of a request (DispatchHandler::run_upstream),
// decided from its outcome alone: the request is finished; it runs again on
// another backend (a retry before the client saw a byte, a failover of a
// resumable stream it has); it gives up (the held upstream error, or the end
// of its open stream); or, preempted, it queues again and goes on from its
// checkpoint. docs/resilience.md, "Retries and failover".
#pragma once

#include <cstddef>
#include <cstdint>

#include "gateway/relay/upstream_relay.hpp"
#include "gateway/resilience/run_verdict.hpp"

namespace arbiter {

enum class AfterRun : uint8_t {
  kFinish,    // the answer is complete, or its stream ended
  kRunAgain,  // may run again elsewhere (attempts, the pool's budget and the client permitting)
  kGiveUp,    // nothing more to try: the held error, or the end of the open stream
  kRequeue,   // preempted: queue again, then continue from the checkpoint
};

// `verdict`: judge(outcome); `backends`: the backends of the pool the run
// was on. An engine's 429 goes to another backend, never back to the one
// that refused for load: with one backend it is the client's answer.
AfterRun after_run(const RelayOutcome& outcome, RunVerdict verdict, std::size_t backends);

// Whether nothing of the run reached the client, or its resumable stream is
// still open: the request may run again elsewhere. (A resumed run that
// failed before its first byte leaves its stream open too.)
bool run_unsent(const RelayOutcome& outcome);

}  // namespace arbiter
