// Recomputes each team's dynamic quota (teams[].dynamic_quota) from the
// usage ledger every recompute_s and sets it in the quota book: the BRIEF's
// formula over the team's last 24 hours of tokens (core/quota/dynamic_quota.hpp).
// The value per team is in /metrics (arbiter_team_dynamic_quota).
#pragma once

#include <memory>
#include <vector>

#include "gateway/periodic.hpp"
#include "gateway/observers/usage/usage_book.hpp"
#include "gateway/stages/quota/quota_book.hpp"

namespace arbiter {

class DynamicQuotaUpdater {
 public:
  DynamicQuotaUpdater(const Config& config, QuotaBook& quotas, const UsageBook& usage);

  // Recomputes the teams whose time has come (all of them the first time).
  void update(quota::TimePoint now, usage::WallTime wall_now);
  // Runs update() about every second on `executor` until stop().
  void start(net::any_io_executor executor);
  void stop();

 private:
  struct Team {
    const quota::TeamConfig* config;
    quota::TimePoint next{};
  };
  QuotaBook& quotas_;
  const UsageBook& usage_;
  std::vector<Team> teams_;
  Periodic loop_;
};

}  // namespace arbiter
