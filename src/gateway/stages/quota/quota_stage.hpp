// Admission stage 5 (after caps, so max_tokens is the capped one): tenant
// and team quotas (docs/quotas.md), in this process or shared through
// Redis. Reserves 1 request and the token estimate (prompt + max_tokens,
// or the default output estimate) in every quota entry covering the
// request, or refuses it: 429 with a Retry-After from the bucket, or 400
// when the request alone is over a limit. The x-ratelimit-* headers
// (OpenAI's names) go on every answer to a tenant with quotas. Before the
// quota, the tenant's traffic breaker: over traffic_breaker.degrade_at x
// its quota requests are degraded (max_tokens capped, and moved to
// traffic_breaker.degrade_class when set), over block_at refused for a
// back-off. QuotaObserver settles the reservation when the request ends.
#pragma once

#include "gateway/pipeline/stage.hpp"
#include "gateway/stages/quota/quota_book.hpp"

namespace arbiter {

class QuotaStage final : public DeclaredStage<QuotaStage> {
 public:
  QuotaStage(const Config& config, QuotaBook& book);
  static constexpr std::string_view kName = "quota";
  static constexpr Phase kPhase = Phase::kAdmit;
  // Decided at once unless a shared lease must be refilled from the store
  // first (then admit_async, bounded by quota_store.timeout_ms).
  Verdict admit(RequestContext& ctx) override;
  Task<Verdict> admit_async(RequestContext& ctx) override;

 private:
  quota::Subject subject(const RequestContext& ctx) const;
  // The traffic breaker: its stage's header, a refusal in red, and in
  // orange max_tokens capped (traffic_breaker.degrade_max_tokens).
  std::optional<ApiError> traffic(RequestContext& ctx, quota::TimePoint now);
  // Orange: max_tokens capped, and the request moved to degrade_class.
  void degrade(RequestContext& ctx);
  // Headers, metrics, and the permit or the refusal.
  std::optional<ApiError> decide(RequestContext& ctx, QuotaBook::Admission admission);

  const Config& config_;
  QuotaBook& book_;
  StringMap<bool> limited_;  // tenants some quota covers (quota::has_quotas)
  std::optional<std::size_t> degrade_class_;  // traffic_breaker.degrade_class's index
};

// Settles a request's reservation with the tokens it really used: the
// engine's usage (a whole answer's, or a stream's usage chunk), or the
// prompt estimate plus the tokens counted from a stream's events (one per
// data event); a whole answer without usage keeps its reservation (the
// most it could have used). A request that got no answer from an engine
// (refused, cancelled while queued) or an error answer releases it.
class QuotaObserver final : public CompletionObserver {
 public:
  void on_complete(const RequestContext& ctx) override;
};

// "20ms", "12s", "6m0s", "1h2m3s": the x-ratelimit-reset-* value.
std::string format_reset(quota::Duration d);

}  // namespace arbiter
