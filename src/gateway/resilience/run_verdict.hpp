// What one upstream run says about its backend, for outlier detection and
// the model breaker: a failure is the backend's fault (a 5xx answer, a
// refused or reset connection, a time-out, a broken stream); a client that
// left, the gateway's own supersede or preemption, a 4xx or an answer over
// the size limit say nothing about it.
#pragma once

#include "gateway/relay/upstream_relay.hpp"

namespace arbiter {

enum class RunVerdict : uint8_t {
  kSuccess,     // the backend answered (2xx, or a 4xx: the request's fault)
  kFailure,     // the backend failed it
  kOverloaded,  // 429: the backend refused for load (not a failure; its Retry-After holds it)
  kNeutral,     // nothing learnt about the backend
};

RunVerdict judge(const RelayOutcome& outcome);

}  // namespace arbiter
