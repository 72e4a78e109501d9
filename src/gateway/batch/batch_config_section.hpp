// The `batches` section (docs/batches.md, docs/configuration.md): its keys.
#pragma once

#include "gateway/config_section.hpp"

namespace arbiter {

std::span<const SettingKey<BatchConfig>> batch_keys();
ConfigSection batches_section();

}  // namespace arbiter
