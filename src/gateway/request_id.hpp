// Request ids: the client's x-request-id when it is sane, else a new one.
#pragma once

#include <string>
#include <string_view>

namespace arbiter {

// Accepts up to 128 characters of [A-Za-z0-9._:-]; anything else is replaced
// by a fresh id, so the id is always safe to log and to forward.
std::string choose_request_id(std::string_view from_client);

}  // namespace arbiter
