// The `cache:` section (core/cache/cache_config.hpp; docs/cache.md): its key
// table, and a class's `cache:` table, are in yaml/setting_keys; the
// gateway's checks of it are here.
#pragma once

#include "gateway/config_section.hpp"

namespace arbiter {

ConfigSection cache_section();

}  // namespace arbiter
