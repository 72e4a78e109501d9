// Relay outcomes written by hand, for the tests of what follows a run
// (run_verdict, run_policy).
#pragma once

#include <string>

#include "gateway/relay/upstream_relay.hpp"

namespace arbiter::testing {

// The backend answered `upstream_status`, and the client got it.
inline RelayOutcome answered(unsigned upstream_status) {
  RelayOutcome o;
  o.upstream_status = upstream_status;
  o.status = static_cast<int>(upstream_status);
  return o;
}

// The gateway made an error of `kind` (connect, timeout, reset, ...) before
// the client got anything.
inline RelayOutcome failed(std::string kind, ErrorCode code) {
  RelayOutcome o;
  o.upstream_error = std::move(kind);
  o.error = ApiError{code, "x", {}, {}};
  return o;
}

}  // namespace arbiter::testing
