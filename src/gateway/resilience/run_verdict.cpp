#include "gateway/resilience/run_verdict.hpp"

namespace arbiter {

RunVerdict judge(const RelayOutcome& o) {
  if (o.interrupted || o.preempted) return RunVerdict::kNeutral;
  if (o.upstream_status == 429) return RunVerdict::kOverloaded;
  if (o.upstream_status >= 500) return RunVerdict::kFailure;
  // A gateway-made error without a 5xx answer: the connection or the
  // stream failed (connect, timeout, reset, protocol, status), unless the
  // answer was only too large.
  if (!o.upstream_error.empty()) return o.upstream_error == "too_large" ? RunVerdict::kNeutral : RunVerdict::kFailure;
  if (o.status == 499) return RunVerdict::kNeutral;  // the client left: the run says nothing
  return o.upstream_status > 0 ? RunVerdict::kSuccess : RunVerdict::kNeutral;
}

}  // namespace arbiter
