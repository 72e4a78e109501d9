#include "gateway/stages/quota/dynamic_quota_updater.hpp"

#include "core/quota/dynamic_quota.hpp"

namespace arbiter {

DynamicQuotaUpdater::DynamicQuotaUpdater(const Config& config, QuotaBook& quotas, const UsageBook& usage,
                                         GatewayMetrics& metrics)
    : quotas_(quotas), usage_(usage), metrics_(metrics) {
  for (const quota::TeamConfig& team : config.teams) {
    if (team.dynamic_quota) teams_.push_back({&team});
  }
}

void DynamicQuotaUpdater::update(quota::TimePoint now, usage::WallTime wall_now) {
  for (Team& t : teams_) {
    if (now < t.next) continue;
    const quota::DynamicQuotaConfig& d = *t.config->dynamic_quota;
    t.next = now + d.every;
    const std::vector<double> hourly = usage_.team_hourly_tokens(t.config->name, wall_now);
    const double limit = quota::dynamic_quota(
        {.members = d.members, .per_member = d.per_member, .complexity = d.complexity, .hourly_usage = hourly});
    quotas_.set_dynamic_limit(t.config->name, now, limit);
    metrics_.team_dynamic_quota
        .with({t.config->name, d.tokens ? "tokens_per_minute" : "requests_per_minute"})
        .set(limit);
  }
}

void DynamicQuotaUpdater::start(net::any_io_executor executor) {
  if (teams_.empty()) return;
  update(quota::Clock::now(), std::chrono::system_clock::now());
  tick_ = std::make_shared<net::steady_timer>(executor);
  net::co_spawn(executor, run(), net::detached);
}

void DynamicQuotaUpdater::stop() {
  if (tick_) net::post(tick_->get_executor(), [tick = tick_] { tick->cancel(); });
}

Task<void> DynamicQuotaUpdater::run() {
  const auto tick = tick_;
  for (;;) {
    tick->expires_after(std::chrono::seconds(1));
    if (auto [ec] = co_await tick->async_wait(kAsTuple); ec) co_return;
    update(quota::Clock::now(), std::chrono::system_clock::now());
  }
}

}  // namespace arbiter
