// `Authorization: Bearer <credential>`: the scheme in any case (RFC 9110
// 11.1). Tenants' API keys (core/tenants) and the shared-secret endpoints
// (the gateway's admin routes, arbiter-sim's --api-key) read it here.
#pragma once

#include <string_view>

namespace arbiter {

// The credential after a Bearer scheme; empty when there is none.
std::string_view bearer_credential(std::string_view authorization);

// True when `authorization` (the header's value) carries exactly `token`,
// compared in constant time. An empty `token` matches nothing: callers
// decide whether one is needed.
bool bearer_matches(std::string_view authorization, std::string_view token);

}  // namespace arbiter
