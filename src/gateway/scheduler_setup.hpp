// Maps the gateway config onto the scheduler core's config: one pool per
// model (its backends' max_concurrency), the classes' policies in order, the
// tenants' weights (tenant i is TenantId i; the anonymous tenant is
// tenants.size()).
#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/scheduler_config.hpp"

namespace arbiter {

sched::SchedulerConfig to_scheduler_config(const Config& config);

// The TenantId of a tenant (nullptr: anonymous).
sched::TenantId tenant_id(const Config& config, const TenantConfig* tenant);

}  // namespace arbiter
