// Copies each quota entry's state into /metrics (remaining, in flight,
// reserved tokens), at scrape time like the scheduler's gauges.
#pragma once

#include "gateway/gateway_metrics.hpp"
#include "gateway/stages/quota/quota_book.hpp"

namespace arbiter {

void export_quota_state(const QuotaBook& book, GatewayMetrics& metrics);

}  // namespace arbiter
