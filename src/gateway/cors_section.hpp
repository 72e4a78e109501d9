// The `cors` section (docs/configuration.md): its keys, and origins a
// browser could send.
#pragma once

#include "gateway/config_section.hpp"

namespace arbiter {

std::span<const SettingKey<CorsConfig>> cors_keys();
ConfigSection cors_section();

}  // namespace arbiter
