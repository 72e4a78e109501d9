#include "gateway/observers/metrics/request_metrics.hpp"

#include "gateway/scheduler_setup.hpp"

namespace arbiter {

namespace {

// A labelled series found on first use and kept in `slot`: a labelled
// lookup (label vector, hash) per request otherwise. `find` returns it.
template <class Series, class Find>
Series& cached_series(std::atomic<Series*>& slot, const Find& find) {
  Series* s = slot.load(std::memory_order_acquire);
  if (s == nullptr) {
    s = &find();
    slot.store(s, std::memory_order_release);
  }
  return *s;
}

// Counts the record's prompt, completion and cached tokens into `series`,
// whose counter of a kind is `counter(kind)`.
template <class CounterOf>
void count_tokens(std::array<std::atomic<metrics::Counter*>, 3>& series, const AccessRecord& rec,
                  const CounterOf& counter) {
  static constexpr std::string_view kKinds[] = {"prompt", "completion", "cached"};
  const int64_t tokens[] = {rec.prompt_tokens, rec.completion_tokens, rec.cached_tokens};
  for (std::size_t k = 0; k < series.size(); ++k) {
    cached_series(series[k], [&]() -> metrics::Counter& { return counter(kKinds[k]); })
        .inc(static_cast<uint64_t>(tokens[k]));
  }
}

}  // namespace

RequestMetrics::RequestMetrics(const Config& config, GatewayMetrics& metrics)
    : config_(config),
      metrics_(metrics),
      class_series_(std::make_unique<ClassSeries[]>(config.models.size() * config.classes.size())),
      tenant_series_(std::make_unique<TenantSeries[]>(config.models.size() * config.classes.size() *
                                                      (config.tenants.size() + 1))),
      team_series_(std::make_unique<TeamSeries[]>(config.models.size() * (config.tenants.size() + 1))) {}

void RequestMetrics::on_start(RequestContext& ctx) {
  metrics_.in_flight.add(1);
  metrics_.request_body_bytes.add(static_cast<double>(ctx.rec.bytes_in));
}

metrics::Histogram& RequestMetrics::class_histogram(const RequestContext& ctx,
                                                    std::atomic<metrics::Histogram*> ClassSeries::*member,
                                                    metrics::Family<metrics::Histogram>& family) {
  const AccessRecord& rec = ctx.rec;
  if (!ctx.admitted) return family.with({rec.model, rec.cls});  // labelled `none`: not cached
  return cached_series(class_series_[ctx.pool() * config_.classes.size() + ctx.cls].*member,
                       [&]() -> metrics::Histogram& { return family.with({rec.model, rec.cls}); });
}

RequestMetrics::TenantSeries& RequestMetrics::tenant_series(const RequestContext& ctx) {
  const std::size_t tenants = config_.tenants.size() + 1, tenant = tenant_id(config_, ctx.tenant);
  return tenant_series_[(ctx.pool() * config_.classes.size() + ctx.cls) * tenants + tenant];
}

void RequestMetrics::count_usage(const RequestContext& ctx, TenantSeries& series) {
  const AccessRecord& rec = ctx.rec;
  const std::size_t tenants = config_.tenants.size() + 1, tenant = tenant_id(config_, ctx.tenant);
  TeamSeries& team = team_series_[ctx.pool() * tenants + tenant];
  if (rec.cost >= 0) {
    cached_series(team.cost, [&]() -> metrics::RealCounter& {
      return metrics_.cost.with({rec.team, rec.model});
    }).add(rec.cost);
  }
  if (rec.prompt_tokens < 0) return;  // the engine reported no usage
  count_tokens(series.tokens, rec,
               [&](std::string_view kind) -> metrics::Counter& {
                 return metrics_.tokens.with({rec.model, rec.cls, rec.tenant, kind});
               });
  count_tokens(team.tokens, rec, [&](std::string_view kind) -> metrics::Counter& {
    return metrics_.team_tokens.with({rec.team, rec.model, kind});
  });
}

void RequestMetrics::on_complete(const RequestContext& ctx) {
  const AccessRecord& rec = ctx.rec;
  const RelayOutcome& outcome = ctx.outcome;
  // Only an admitted request has its (pool, class, tenant); the others
  // (labelled class `none`) are rare enough to look up.
  TenantSeries* series = ctx.admitted ? &tenant_series(ctx) : nullptr;
  const auto requests = [&]() -> metrics::Counter& {
    return metrics_.requests.with({rec.model, rec.cls, rec.tenant, std::to_string(rec.status)});
  };
  (series && rec.status == 200 ? cached_series(series->ok, requests) : requests()).inc();
  if (ctx.dispatch_queue_ms) {
    const auto queue_wait = [&]() -> metrics::Histogram& {
      return metrics_.queue_wait.with({rec.model, rec.cls, rec.tenant});
    };
    (series ? cached_series(series->queue_wait, queue_wait) : queue_wait()).observe(*ctx.dispatch_queue_ms / 1000.0);
  }
  if (!rec.wait_reason.empty()) {
    metrics_.queue_waits.with({rec.model, rec.cls, std::string(rec.wait_reason)}).inc();
  }
  if (series) count_usage(ctx, *series);  // usage and cost exist only for admitted requests
  class_histogram(ctx, &ClassSeries::duration, metrics_.duration).observe(rec.duration_ms / 1000.0);
  if (rec.ttfb_ms >= 0) {
    class_histogram(ctx, &ClassSeries::first_byte, metrics_.first_byte).observe(rec.ttfb_ms / 1000.0);
  }
  if (rec.status == 499) metrics_.cancelled.with({rec.model, rec.cls}).inc();
  if (!outcome.upstream_error.empty()) metrics_.upstream_errors.with({rec.backend, outcome.upstream_error}).inc();
  if (outcome.retried) metrics_.upstream_retries.with({rec.backend}).inc();
  if (rec.preemptions > 0) metrics_.resumed.with({rec.model, rec.cls}).inc();
  metrics_.in_flight.sub(1);
  if (!ctx.body_released) metrics_.request_body_bytes.sub(static_cast<double>(rec.bytes_in));
}

}  // namespace arbiter
