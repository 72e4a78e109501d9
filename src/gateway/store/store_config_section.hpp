// The `store` section (docs/configuration.md, docs/audit.md): its keys.
#pragma once

#include "gateway/config_section.hpp"

namespace arbiter {

std::span<const SettingKey<StoreConfig>> store_keys();
ConfigSection store_section();

}  // namespace arbiter
