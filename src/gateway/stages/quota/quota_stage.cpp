#include "gateway/stages/quota/quota_stage.hpp"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "observability/event_log.hpp"

namespace arbiter {

namespace {

void add_rate_headers(RequestContext::Headers& headers, const quota::RateStatus& s) {
  auto add = [&](const char* what, const quota::RateStatus::Figures& f) {
    headers.emplace_back(fmt::format("x-ratelimit-limit-{}", what), fmt::format("{}", std::floor(f.limit)));
    headers.emplace_back(fmt::format("x-ratelimit-remaining-{}", what), fmt::format("{}", std::floor(f.remaining)));
    headers.emplace_back(fmt::format("x-ratelimit-reset-{}", what), format_reset(f.reset));
  };
  if (s.requests) add("requests", *s.requests);
  if (s.tokens) add("tokens", *s.tokens);
}

std::string limit_text(double v) { return fmt::format("{}", v); }

ApiError refusal_error(const quota::Refusal& r, const RequestInfo& info) {
  if (r.store_down) {
    return ApiError{ErrorCode::kNoBackend,
                    fmt::format("the quota store is unreachable and {} refuses requests meanwhile "
                                "(quota_store_down: closed)",
                                r.owner),
                    std::nullopt, std::chrono::ceil<std::chrono::milliseconds>(r.retry_after)};
  }
  const std::string limit(quota::limit_name(r.limit));
  if (r.retry_after == quota::Duration::max()) {
    // Waiting would not help: the request alone is over the limit.
    const bool several = info.choices > 1;
    return ApiError{ErrorCode::kInvalidRequest,
                    fmt::format("this request needs ~{} tokens (prompt estimate + max_tokens{}), more than the {} of {} "
                                "of {}: lower max_tokens{} or shorten the prompt",
                                info.cost_estimate(), several ? fmt::format(" x {} answers", info.choices) : "",
                                limit, r.owner, limit_text(r.limit_value), several ? ", ask for fewer answers" : ""),
                    "max_tokens", std::nullopt};
  }
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(r.retry_after);
  return ApiError{ErrorCode::kRateLimited,
                  fmt::format("quota exceeded: {} of {} ({}); retry after {:.3f} s", limit, r.owner,
                              limit_text(r.limit_value), std::chrono::duration<double>(wait).count()),
                  std::nullopt, wait};
}

}  // namespace

std::string format_reset(quota::Duration d) {
  using namespace std::chrono;
  if (d < seconds(1)) return fmt::format("{}ms", ceil<milliseconds>(d).count());
  auto s = ceil<seconds>(d).count();
  if (s < 60) return fmt::format("{}s", s);
  const auto h = s / 3600, m = (s % 3600) / 60;
  s %= 60;
  return h ? fmt::format("{}h{}m{}s", h, m, s) : fmt::format("{}m{}s", m, s);
}

QuotaStage::QuotaStage(const Config& config, QuotaBook& book)
    : config_(config), book_(book) {
  for (std::size_t c = 0; c < config.classes.size(); ++c) {
    if (config.classes[c].name == config.traffic_breaker.degrade_class) degrade_class_ = c;
  }
  for (const TenantConfig& t : config.tenants) {
    if (quota::has_quotas(t, config.teams)) limited_.emplace(t.name, true);
  }
}

quota::Subject QuotaStage::subject(const RequestContext& ctx) const {
  return {.tenant = ctx.tenant->name, .klass = config_.classes[ctx.cls].name, .model = config_.models[ctx.pool()].name,
          .store_down = ctx.tenant->quota_store_down};
}

std::optional<ApiError> QuotaStage::traffic(RequestContext& ctx, quota::TimePoint now) {
  const QuotaBook::Traffic t = book_.traffic(ctx.tenant->name, now, ctx.parsed.info.cost_estimate());
  for (const quota::TrafficTransition& change : t.transitions) {
    const std::string from(quota::stage_name(change.from)), to(quota::stage_name(change.to));
    book_.metrics().traffic_transitions.with({ctx.tenant->name, from, to}).inc();
    log_event(EventLevel::kWarn, "traffic_breaker",
              {{"tenant", ctx.tenant->name},
               {"from", from},
               {"to", to},
               {"demand_ratio", change.demand_ratio},
               {"backoff_s", std::chrono::duration<double>(change.backoff).count()}});
  }
  const quota::TrafficStage stage = t.verdict.stage;
  if (stage == quota::TrafficStage::kGreen) return std::nullopt;
  ctx.response_headers.emplace_back("x-arbiter-traffic-stage", quota::stage_name(stage));
  if (!t.verdict.admit) {
    add_rate_headers(ctx.response_headers, book_.status(subject(ctx), now));
    book_.metrics().quota_refused.with({ctx.tenant->name, "traffic_breaker"}).inc();
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(t.verdict.retry_after);
    return ApiError{ErrorCode::kRateLimited,
                    fmt::format("traffic breaker open for tenant {}: it asks for over {}x its quota; retry after "
                                "{:.3f} s",
                                ctx.tenant->name, config_.traffic_breaker.block_at,
                                std::chrono::duration<double>(wait).count()),
                    std::nullopt, wait};
  }
  // Orange and the probes of a half-open red: degraded, not refused.
  if (stage >= quota::TrafficStage::kOrange) degrade(ctx);
  return std::nullopt;
}

void QuotaStage::degrade(RequestContext& ctx) {
  const quota::TrafficBreakerConfig& tb = config_.traffic_breaker;
  std::string what;
  if (degrade_class_ && *degrade_class_ != ctx.cls) {
    // A lower priority: the class's pool, cap and scheduling from here on.
    ctx.route_to(config_, *ctx.model_pools, *degrade_class_);
    if (const auto& cap = config_.classes[ctx.cls].max_tokens_cap) apply_max_tokens_cap(ctx.parsed, *cap);
    what = ", class=" + ctx.rec.cls;
  }
  if (apply_max_tokens_cap(ctx.parsed, tb.degrade_max_tokens) || !what.empty()) {
    ctx.response_headers.emplace_back("x-arbiter-degraded", fmt::format("max_tokens={}{}", tb.degrade_max_tokens, what));
  }
}

Verdict QuotaStage::admit(RequestContext& ctx) {
  if (!ctx.tenant || !limited_.contains(ctx.tenant->name)) return Verdict::go();
  if (auto refused = traffic(ctx, quota::Clock::now())) return Verdict::refuse(std::move(*refused));
  auto admission = book_.try_reserve(subject(ctx), quota::Clock::now(), ctx.parsed.info.cost_estimate());
  if (!admission.result && admission.result.error().lease_short) return Verdict::wait();  // a refill from the store
  if (auto refused = decide(ctx, std::move(admission))) return Verdict::refuse(std::move(*refused));
  return Verdict::go();
}

Task<Verdict> QuotaStage::admit_async(RequestContext& ctx) {
  std::optional<ApiError> refused = decide(ctx, co_await book_.reserve(subject(ctx), ctx.parsed.info.cost_estimate()));
  if (refused) co_return Verdict::refuse(std::move(*refused));
  co_return Verdict::go();
}

std::optional<ApiError> QuotaStage::decide(RequestContext& ctx, QuotaBook::Admission admission) {
  add_rate_headers(ctx.response_headers, admission.status);
  auto& reserved = admission.result;
  if (!reserved) {
    const std::string limit(reserved.error().store_down ? "store_down" : quota::limit_name(reserved.error().limit));
    book_.metrics().quota_refused.with({ctx.tenant->name, limit}).inc();
    return refusal_error(reserved.error(), ctx.parsed.info);
  }
  ctx.slots.emplace<QuotaPermit>(book_, std::move(*reserved));
  return std::nullopt;
}

void QuotaObserver::on_complete(const RequestContext& ctx) {
  QuotaPermit* const quota = ctx.slots.get<QuotaPermit>();
  if (quota == nullptr) return;
  // Charged what the usage ledger bills (RequestContext::bill); nothing
  // when it never reached an engine, or the engine produced nothing for it.
  const std::optional<RelayOutcome::Billed>& billed = ctx.bill;
  if (billed) {
    quota->settle(quota::Clock::now(), billed->total());
  } else {
    quota->release();
  }
}

}  // namespace arbiter
