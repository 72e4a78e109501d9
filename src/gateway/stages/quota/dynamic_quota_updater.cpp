#include "gateway/stages/quota/dynamic_quota_updater.hpp"

#include "core/quota/dynamic_quota.hpp"

namespace arbiter {

DynamicQuotaUpdater::DynamicQuotaUpdater(const Config& config, QuotaBook& quotas, const UsageBook& usage)
    : quotas_(quotas), usage_(usage) {
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
    quotas_.metrics().team_dynamic_quota
        .with({t.config->name, d.tokens ? "tokens_per_minute" : "requests_per_minute"})
        .set(limit);
  }
}

void DynamicQuotaUpdater::start(net::any_io_executor executor) {
  if (teams_.empty()) return;
  update(quota::Clock::now(), std::chrono::system_clock::now());
  loop_.start(executor, std::chrono::seconds(1), [this]() -> Task<void> {
    update(quota::Clock::now(), std::chrono::system_clock::now());
    co_return;
  });
}

void DynamicQuotaUpdater::stop() { loop_.stop(); }

}  // namespace arbiter
