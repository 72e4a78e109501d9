// A team's dynamic quota follows its usage: the BRIEF's formula over the
// usage ledger's last 24 hours becomes the limit the quota book enforces,
// and changes what is admitted.
#include "gateway/stages/quota/dynamic_quota_updater.hpp"

#include <gtest/gtest.h>

#include "gateway/config_yaml.hpp"

namespace arbiter {
namespace {

constexpr const char* kConfig = R"(
tenants:
  - {name: a, team: ml, api_keys: [k1]}
teams:
  - {name: ml, dynamic_quota: {members: 2, per_member: 50, complexity: 1.5, recompute_s: 60}}
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000"}]
)";

int admitted(QuotaBook& book, quota::TimePoint now, int asked) {
  int n = 0;
  for (int i = 0; i < asked; ++i) {
    if (auto a = book.try_reserve({.tenant = "a", .klass = "chat", .model = "m1"}, now, 0); a.result) {
      ++n;
      book.release(*a.result);
    }
  }
  return n;
}

TEST(DynamicQuotaUpdater, TheTeamsLimitFollowsItsUsage) {
  auto config = parse_config(kConfig);
  ASSERT_TRUE(config) << ::testing::PrintToString(config.error());
  net::io_context ioc;
  metrics::Registry registry;
  QuotaBook quotas(*config, ioc.get_executor(), registry);
  UsageBook usage(*config);
  DynamicQuotaUpdater updater(*config, quotas, usage);
  QuotaMetrics& metrics = quotas.metrics();

  // No history: 2 x 50 x 1.5 = 150 requests a minute.
  const quota::TimePoint t0 = quota::TimePoint{} + std::chrono::hours(1000);
  const usage::WallTime day = std::chrono::sys_days{std::chrono::year{2026} / 12 / 1};
  updater.update(t0, day);
  EXPECT_EQ(admitted(quotas, t0, 200), 150);

  // 24 hours alternating 100 and 300 tokens: mean 200, std 100, so the
  // factor is 1 + min(0.5 x 0.5, 0.3) = 1.25: 187.5 a minute.
  for (int h = 0; h < 24; ++h) {
    usage.record(day + std::chrono::hours(h), {.tenant = 0, .model = 0, .klass = 0},
                 {.requests = 1, .prompt_tokens = h % 2 ? 300u : 100u});
  }
  const usage::WallTime next_day = day + std::chrono::hours(24);
  // Not before recompute_s has passed.
  updater.update(t0 + std::chrono::seconds(30), next_day);
  EXPECT_DOUBLE_EQ(metrics.team_dynamic_quota.with({"ml", "requests_per_minute"}).value(), 150);
  const quota::TimePoint later = t0 + std::chrono::minutes(2);  // the bucket is full again
  updater.update(later, next_day);
  EXPECT_EQ(admitted(quotas, later, 300), 187);
  EXPECT_DOUBLE_EQ(metrics.team_dynamic_quota.with({"ml", "requests_per_minute"}).value(), 187.5);
}

}  // namespace
}  // namespace arbiter
