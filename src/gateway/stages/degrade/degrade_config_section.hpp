// The `degradation:` section (core/overload/overload_config.hpp;
// docs/overload.md): its key table, and a class's `degrade:` table, are in
// yaml/setting_keys, shared with arbiter-bench's scenarios; the gateway's
// checks of it are here.
#pragma once

#include <span>

#include "core/overload/overload_config.hpp"
#include "gateway/config_section.hpp"

namespace arbiter {

ConfigSection degradation_section();

}  // namespace arbiter
