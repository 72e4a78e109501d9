// The gateway's usage ledger (core/usage_ledger/) shared by every I/O
// thread: one mutex around it. A request's record takes it for a bucket
// lookup; a report holds it while it adds up the range's buckets.
#pragma once

#include <mutex>
#include <span>
#include <vector>

#include "core/config.hpp"
#include "core/usage_ledger/usage_grouping.hpp"
#include "gateway/store/database.hpp"

namespace arbiter {

// The ledger's ids: tenant = its index in config.tenants (the anonymous
// tenant last, in team "anonymous"), model = the pool's index in
// config.models (one class is in one pool of a model, so a (tenant, pool,
// class) is a (tenant, model, class)), class = its index in config.classes.
usage::Names usage_names(const Config& config);

class UsageBook {
 public:
  explicit UsageBook(const Config& config) : ledger_(usage_names(config)) {}

  // The ledger's ids for a config's tenants, models and classes (by their
  // indexes in it, the anonymous tenant last): a reloaded config's usage
  // goes on under the same names.
  usage::NameIds ids_for(const Config& config) {
    std::lock_guard lock(mu_);
    return ledger_.adopt(usage_names(config));
  }

  // The usage the store kept (its hourly sums since the retention's start),
  // at a start: /admin/usage and the dynamic quotas' history survive a
  // restart.
  void seed(const std::vector<store::HourlyUsage>& hours);

  // `key` in the ledger's ids (ids_for).
  void record(usage::WallTime at, usage::UsageKey key, const usage::UsageTotals& used) {
    std::lock_guard lock(mu_);
    ledger_.record(at, key, used);
  }
  std::vector<usage::ReportRow> report(usage::WallTime from, usage::WallTime to,
                                       std::span<const usage::Dimension> by) const {
    std::lock_guard lock(mu_);
    return usage::group_usage(ledger_, from, to, by);
  }
  // A team's tokens per hour over the 24 whole hours before `now` (its dynamic quota).
  std::vector<double> team_hourly_tokens(std::string_view team, usage::WallTime now) const {
    std::lock_guard lock(mu_);
    return ledger_.team_hourly_tokens(team, now);
  }

 private:
  mutable std::mutex mu_;
  usage::UsageLedger ledger_;
};

}  // namespace arbiter
