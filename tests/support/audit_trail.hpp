// The gateway's audit trail as /admin/audit lists it (docs/audit.md), read
// until it holds a piece of text: the store writes it off the request path,
// a moment after the answers.
#pragma once

#include <string>

#include "support/gateway_process.hpp"

namespace arbiter::test {

// The newest `limit` rows' JSON once it contains `needle` (within 10 s),
// else the last one read; `found` says which.
std::string audit_trail_with(GatewayProcess& gateway, const std::string& needle, bool& found, int limit = 1000);

}  // namespace arbiter::test
