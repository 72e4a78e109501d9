// The model breaker's section (docs/resilience.md): `model_breaker`.
#pragma once

#include "gateway/config_section.hpp"

namespace arbiter {

std::span<const SettingKey<resilience::ModelBreakerSectionConfig>> model_breaker_keys();
ConfigSection model_breaker_section();

}  // namespace arbiter
