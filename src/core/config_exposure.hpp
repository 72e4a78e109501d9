// What a config exposes beyond this host (docs/security.md): the rules the
// gateway says at start-up and `--check` prints. Pure: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"

namespace arbiter {

// Whether a listener address reaches this host only (127.0.0.0/8, ::1,
// localhost).
bool is_loopback(std::string_view address);

// One sentence per thing the config leaves open that an operator may not
// mean to (today: an API port beyond this host with no tenant keys asked);
// empty when nothing is.
std::vector<std::string> exposure_warnings(const Config& config);

}  // namespace arbiter
