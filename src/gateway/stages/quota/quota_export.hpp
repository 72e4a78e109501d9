// Copies each quota entry's state into /metrics (remaining, in flight,
// reserved tokens), the store's state and each traffic breaker's stage, at
// scrape time like the scheduler's gauges.
#pragma once

#include "gateway/stages/quota/quota_book.hpp"

namespace arbiter {

void export_quota_state(QuotaBook& book);

}  // namespace arbiter
