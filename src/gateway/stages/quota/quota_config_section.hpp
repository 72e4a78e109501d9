// The quota feature's sections (docs/quotas.md): `quota_store` (where the
// counters live) and `traffic_breaker` (a tenant's staged limits).
#pragma once

#include "gateway/config_section.hpp"

namespace arbiter {

std::span<const SettingKey<quota::QuotaStoreConfig>> quota_store_keys();
std::span<const SettingKey<quota::TrafficBreakerConfig>> traffic_breaker_keys();
ConfigSection quota_store_section();
ConfigSection traffic_breaker_section();

}  // namespace arbiter
