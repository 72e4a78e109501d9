// The check behind a shared-secret endpoint (the gateway's admin routes,
// arbiter-sim's --api-key): `Authorization: Bearer <token>`, the scheme in
// any case (RFC 9110 11.1), the token compared in constant time.
#pragma once

#include <string_view>

namespace arbiter {

// True when `authorization` (the header's value) carries exactly `token`.
// An empty `token` matches nothing: callers decide whether one is needed.
bool bearer_matches(std::string_view authorization, std::string_view token);

}  // namespace arbiter
