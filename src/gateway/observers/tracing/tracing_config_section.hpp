// The `tracing` section (docs/tracing.md, docs/configuration.md): its keys.
#pragma once

#include "gateway/config_section.hpp"

namespace arbiter {

std::span<const SettingKey<TracingConfig>> tracing_keys();
ConfigSection tracing_section();

}  // namespace arbiter
