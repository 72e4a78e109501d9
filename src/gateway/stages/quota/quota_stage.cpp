#include "gateway/stages/quota/quota_stage.hpp"

#include <cmath>

#include <fmt/format.h>

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

ApiError refusal_error(const quota::Refusal& r, int64_t tokens) {
  const std::string limit(quota::limit_name(r.limit));
  if (r.retry_after == quota::Duration::max()) {
    // Waiting would not help: the request alone is over the limit.
    return ApiError{ErrorCode::kInvalidRequest,
                    fmt::format("this request needs ~{} tokens (prompt estimate + max_tokens), more than the {} of {} "
                                "of {}: lower max_tokens or shorten the prompt",
                                tokens, limit, r.owner, limit_text(r.limit_value)),
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

Verdict QuotaStage::admit(RequestContext& ctx) {
  if (!ctx.tenant || !book_.limits(ctx.tenant->name)) return Verdict::go();
  const quota::Subject who{.tenant = ctx.tenant->name, .klass = config_.classes[ctx.cls].name,
                           .model = ctx.parsed.info.model};
  const int64_t tokens = ctx.parsed.info.cost_estimate();
  const auto now = quota::Clock::now();
  auto reserved = book_.reserve(who, now, tokens);
  add_rate_headers(ctx.response_headers, book_.status(who, now));
  if (!reserved) {
    metrics_.quota_refused.with({ctx.tenant->name, std::string(quota::limit_name(reserved.error().limit))}).inc();
    return Verdict::refuse(refusal_error(reserved.error(), tokens));
  }
  ctx.quota.emplace(book_, std::move(*reserved));
  return Verdict::go();
}

void QuotaObserver::on_complete(const RequestContext& ctx) {
  if (!ctx.quota) return;
  const RelayOutcome& o = ctx.outcome;
  const auto now = quota::Clock::now();
  if (!ctx.admitted || !ctx.dispatch_queue_ms) {
    ctx.quota->release();  // never reached an engine
  } else if (o.usage) {
    ctx.quota->settle(now, o.usage->prompt_tokens + o.usage->completion_tokens);
  } else if (o.generated >= 0) {
    ctx.quota->settle(now, ctx.parsed.info.prompt_tokens_estimate + o.generated);
  } else if (o.status == 200 || (o.status == 499 && ctx.conn.body_bytes_sent() > 0)) {
    // An answer without usage (a plain stream, or one the client left
    // mid-way): at most what was reserved.
    ctx.quota->settle(now, ctx.quota->reserved_tokens());
  } else {
    ctx.quota->release();  // refused or failed: the engine produced nothing for it
  }
}

}  // namespace arbiter
