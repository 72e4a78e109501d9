#include "gateway/observers/usage/usage_observer.hpp"

#include <algorithm>

#include "gateway/scheduler_setup.hpp"

namespace arbiter {

void UsageObserver::on_complete(const RequestContext& ctx) {
  if (!ctx.dispatch_queue_ms) return;  // never reached an engine: nothing used
  const AccessRecord& rec = ctx.rec;
  const usage::UsageKey key{.tenant = ids_.tenants[tenant_id(config_, ctx.tenant)],
                            .model = static_cast<uint16_t>(ids_.models[ctx.pool()]),
                            .klass = static_cast<uint16_t>(ids_.classes[ctx.cls])};
  const bool reported = rec.prompt_tokens >= 0;
  const usage::UsageTotals used{.requests = 1,
                                .prompt_tokens = reported ? static_cast<uint64_t>(rec.prompt_tokens) : 0,
                                .completion_tokens = reported ? static_cast<uint64_t>(rec.completion_tokens) : 0,
                                .cached_tokens = reported ? static_cast<uint64_t>(rec.cached_tokens) : 0,
                                .cost = std::max(rec.cost, 0.0)};
  book_.record(rec.ts, key, used);
}

}  // namespace arbiter
