// The resilience sections (docs/resilience.md): `outlier_detection`,
// `retries` and `health_probes`.
#pragma once

#include "gateway/config_section.hpp"

namespace arbiter {

std::span<const SettingKey<resilience::OutlierDetectionConfig>> outlier_detection_keys();
std::span<const SettingKey<resilience::RetryConfig>> retries_keys();
std::span<const SettingKey<resilience::HealthProbesConfig>> health_probes_keys();
ConfigSection outlier_detection_section();
ConfigSection retries_section();
ConfigSection health_probes_section();

}  // namespace arbiter
