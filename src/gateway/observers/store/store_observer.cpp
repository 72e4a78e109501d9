#include "gateway/observers/store/store_observer.hpp"

#include <fmt/format.h>

namespace arbiter {

namespace {

int64_t unix_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

void StoreObserver::on_complete(const RequestContext& ctx) {
  const AccessRecord& rec = ctx.rec;
  const int64_t ts = unix_ms(rec.ts);
  if (ctx.dispatch_queue_ms) {  // reached an engine: billed
    store_.add(store::UsageRow{.ts_ms = ts,
                               .request_id = rec.request_id,
                               .tenant = rec.tenant,
                               .team = rec.team,
                               .model = rec.model,
                               .klass = rec.cls,
                               .status = rec.status,
                               .prompt_tokens = std::max<int64_t>(rec.prompt_tokens, 0),
                               .completion_tokens = std::max<int64_t>(rec.completion_tokens, 0),
                               .cached_tokens = rec.cached_tokens,
                               .engine_ms = std::max(rec.engine_ms, 0.0),
                               .cost = std::max(rec.cost, 0.0),
                               .tokens_from = std::string(rec.tokens_from)});
  }
  if (store_.audit()) audit(ctx, ts);
}

void StoreObserver::audit(const RequestContext& ctx, int64_t ts_ms) {
  const AccessRecord& rec = ctx.rec;
  auto row = [&](std::string_view kind, std::string detail) {
    store_.add(store::AuditRow{.ts_ms = ts_ms,
                               .kind = std::string(kind),
                               .request_id = rec.request_id,
                               .tenant = rec.tenant,
                               .klass = rec.cls,
                               .model = rec.model,
                               .detail = std::move(detail)});
  };
  if (!ctx.refused_by.empty()) {
    const std::string_view why = ctx.outcome.error ? std::string_view(ctx.outcome.error->message) : "";
    row("refused", fmt::format("stage={} status={} error={} reason={}", ctx.refused_by, rec.status, rec.error, why));
    return;
  }
  if (!ctx.answered_by.empty()) {
    row("answered", fmt::format("stage={} status={} cache={}", ctx.answered_by, rec.status, rec.cache));
    return;
  }
  if (!ctx.dispatch_queue_ms) {  // admitted, never dispatched: gave up or expired in the queue
    row("not_dispatched", fmt::format("status={} error={} queue_ms={:.1f} wait_reason={}", rec.status, rec.error,
                                      rec.queue_ms, rec.wait_reason));
    return;
  }
  row("dispatched", fmt::format("backend={} queue_ms={:.1f} wait_reason={} status={}", rec.backend, rec.queue_ms,
                                rec.wait_reason.empty() ? "none" : rec.wait_reason, rec.status));
  if (rec.preemptions > 0) row("preempted", fmt::format("times={} (yielded its slot; resumed)", rec.preemptions));
  if (!rec.degraded.empty()) row("degraded", fmt::format("actions={}", rec.degraded));
  if (ctx.outcome.retried) row("retried", "a pooled connection was closed; resent");
  if (rec.error == "superseded") row("superseded", "a newer request of the same key replaced it");
}

}  // namespace arbiter
