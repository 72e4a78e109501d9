#include "gateway/handler/run_policy.hpp"

namespace arbiter {

bool run_unsent(const RelayOutcome& outcome) {
  return outcome.held.has_value() || outcome.stream_open || (outcome.status == 0 && outcome.error.has_value());
}

AfterRun after_run(const RelayOutcome& outcome, RunVerdict verdict, std::size_t backends) {
  if (outcome.preempted) return AfterRun::kRequeue;
  if (!run_unsent(outcome)) return AfterRun::kFinish;
  const bool retryable = verdict == RunVerdict::kFailure || (verdict == RunVerdict::kOverloaded && backends > 1);
  return retryable ? AfterRun::kRunAgain : AfterRun::kGiveUp;
}

}  // namespace arbiter
