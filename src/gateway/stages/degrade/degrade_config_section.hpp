// The `degradation:` section and a class's `degrade:` mapping
// (core/overload/overload_config.hpp; docs/overload.md).
#pragma once

#include <span>

#include "core/overload/overload_config.hpp"
#include "gateway/config_section.hpp"

namespace arbiter {

std::span<const SettingKey<overload::DegradationConfig>> degradation_keys();
std::span<const SettingKey<overload::ClassActions>> class_degrade_keys();
ConfigSection degradation_section();

}  // namespace arbiter
