// The usage ledger on a fake wall clock: hourly buckets per (tenant, model,
// class), bounded retention, and a team's last 24 hours for the dynamic
// quota.
#include "core/usage_ledger/usage_ledger.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace arbiter::usage::usage_ledger_test {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

// 2024-05-01T00:00:00Z.
const WallTime kMay1 = WallTime{} + std::chrono::seconds(1'714'521'600);

// Tenants alpha (team ml), beta (team ml), gamma (team web); models m1,
// m2; classes chat, batch.
Names names() {
  return Names{.tenants = {"alpha", "beta", "gamma"},
               .teams = {"ml", "ml", "web"},
               .models = {"m1", "m2"},
               .classes = {"chat", "batch"}};
}

UsageTotals request(uint64_t prompt, uint64_t completion, uint64_t cached = 0, double cost = 0) {
  return {.requests = 1, .prompt_tokens = prompt, .completion_tokens = completion, .cached_tokens = cached, .cost = cost};
}

// Every bucket in [from, to) as "hour-offset tenant model class: requests tokens".
std::vector<std::string> dump(const UsageLedger& l, WallTime from, WallTime to) {
  std::vector<std::string> out;
  l.for_each(from, to, [&](WallTime hour, UsageKey k, const UsageTotals& t) {
    out.push_back(std::to_string((hour - kMay1) / hours(1)) + " " + l.names().tenants[k.tenant] + " " +
                  l.names().models[k.model] + " " + l.names().classes[k.klass] + ": " + std::to_string(t.requests) +
                  " " + std::to_string(t.tokens()));
  });
  return out;
}

TEST(UsageLedger, RequestsAddUpInTheBucketOfTheirHourAndKey) {
  UsageLedger l(names());
  l.record(kMay1 + minutes(5), {.tenant = 0, .model = 0, .klass = 0}, request(100, 20, 60, 0.5));
  l.record(kMay1 + minutes(59), {.tenant = 0, .model = 0, .klass = 0}, request(50, 10, 0, 0.25));
  l.record(kMay1 + minutes(30), {.tenant = 0, .model = 1, .klass = 0}, request(7, 3));
  l.record(kMay1 + minutes(60), {.tenant = 0, .model = 0, .klass = 0}, request(1, 1));  // the next hour
  l.record(kMay1 + minutes(61), {.tenant = 2, .model = 0, .klass = 1}, request(2, 2));
  EXPECT_EQ(dump(l, kMay1, kMay1 + hours(2)),
            (std::vector<std::string>{"0 alpha m1 chat: 2 180", "0 alpha m2 chat: 1 10", "1 alpha m1 chat: 1 2",
                                      "1 gamma m1 batch: 1 4"}));
  UsageTotals first;
  l.for_each(kMay1, kMay1 + hours(1), [&](WallTime, UsageKey k, const UsageTotals& t) {
    if (k.model == 0) first = t;
  });
  EXPECT_EQ(first.prompt_tokens, 150u);
  EXPECT_EQ(first.completion_tokens, 30u);
  EXPECT_EQ(first.cached_tokens, 60u);
  EXPECT_DOUBLE_EQ(first.cost, 0.75);
  EXPECT_EQ(l.buckets(), 4u);
  // Ranges select hours by their start.
  EXPECT_EQ(dump(l, kMay1 + hours(1), kMay1 + hours(2)).size(), 2u);
  EXPECT_EQ(dump(l, kMay1 + minutes(1), kMay1 + hours(1)).size(), 0u);
}

TEST(UsageLedger, ALateRecordOfAnEarlierHourLandsInThatHour) {
  UsageLedger l(names());
  l.record(kMay1 + hours(5), {.tenant = 1}, request(1, 1));
  l.record(kMay1 + hours(2), {.tenant = 1}, request(3, 3));  // a request that arrived then, ended now
  l.record(kMay1 + hours(3), {.tenant = 1}, request(5, 5));
  EXPECT_EQ(dump(l, kMay1, kMay1 + hours(6)),
            (std::vector<std::string>{"2 beta m1 chat: 1 6", "3 beta m1 chat: 1 10", "5 beta m1 chat: 1 2"}));
}

TEST(UsageLedger, HoursPastTheRetentionAreDropped) {
  UsageLedger l(names(), hours(3));
  l.record(kMay1, {}, request(1, 0));
  l.record(kMay1 + hours(1), {}, request(2, 0));
  l.record(kMay1 + hours(2), {}, request(4, 0));
  EXPECT_EQ(l.buckets(), 3u);
  l.record(kMay1 + hours(3), {}, request(8, 0));  // hour 0 is now 3 hours back: gone
  EXPECT_EQ(dump(l, kMay1, kMay1 + hours(10)),
            (std::vector<std::string>{"1 alpha m1 chat: 1 2", "2 alpha m1 chat: 1 4", "3 alpha m1 chat: 1 8"}));
  l.record(kMay1, {}, request(16, 0));  // too old to keep
  EXPECT_EQ(l.buckets(), 3u);
  l.record(kMay1 + hours(30), {}, request(1, 0));  // a day later: only the new hour is left
  EXPECT_EQ(dump(l, kMay1, kMay1 + hours(40)), (std::vector<std::string>{"30 alpha m1 chat: 1 1"}));
}

TEST(UsageLedger, TheDefaultRetentionIs31Days) {
  UsageLedger l(names());
  l.record(kMay1, {}, request(1, 0));
  l.record(kMay1 + hours(31 * 24 - 1), {}, request(1, 0));
  EXPECT_EQ(l.buckets(), 2u);
  l.record(kMay1 + hours(31 * 24), {}, request(1, 0));
  EXPECT_EQ(l.buckets(), 2u);
}

TEST(UsageLedger, ATeamsLast24WholeHoursOldestFirst) {
  UsageLedger l(names());
  const WallTime now = kMay1 + hours(30) + minutes(20);
  l.record(kMay1 + hours(29), {.tenant = 0}, request(100, 10));            // the last whole hour
  l.record(kMay1 + hours(29) + minutes(50), {.tenant = 1, .model = 1}, request(5, 5));  // beta: same team
  l.record(kMay1 + hours(29), {.tenant = 2}, request(1000, 0));            // gamma: another team
  l.record(kMay1 + hours(6), {.tenant = 0}, request(40, 2));               // 24 hours before now's hour
  l.record(kMay1 + hours(5), {.tenant = 0}, request(999, 0));              // 25: too old
  l.record(now, {.tenant = 0}, request(777, 0));                           // the hour of now: not over
  const std::vector<double> ml = l.team_hourly_tokens("ml", now);
  ASSERT_EQ(ml.size(), 24u);
  EXPECT_EQ(ml.front(), 42);
  EXPECT_EQ(ml.back(), 120);
  double rest = 0;
  for (std::size_t i = 1; i + 1 < ml.size(); ++i) rest += ml[i];
  EXPECT_EQ(rest, 0);
  EXPECT_EQ(l.team_hourly_tokens("web", now).back(), 1000);
  EXPECT_EQ(l.team_hourly_tokens("nobody", now), std::vector<double>(24, 0));
  EXPECT_EQ(l.team_hourly_tokens("ml", now, 2), (std::vector<double>{0, 120}));
  // A ledger with nothing in it: 24 zeros (the dynamic quota's "no history").
  EXPECT_EQ(UsageLedger(names()).team_hourly_tokens("ml", now), std::vector<double>(24, 0));
}

TEST(UsageLedger, AKeyOutsideItsNamesIsABug) {
  UsageLedger l(names());
  EXPECT_THROW(l.record(kMay1, {.tenant = 3}, request(1, 1)), std::out_of_range);
  EXPECT_THROW(l.record(kMay1, {.model = 2}, request(1, 1)), std::out_of_range);
  EXPECT_THROW(l.record(kMay1, {.klass = 2}, request(1, 1)), std::out_of_range);
  EXPECT_EQ(l.buckets(), 0u);
}

TEST(UsageLedger, HourOfRoundsDown) {
  EXPECT_EQ(hour_of(kMay1 + minutes(59) + std::chrono::seconds(59)), kMay1);
  EXPECT_EQ(hour_of(kMay1 + hours(1)), kMay1 + hours(1));
}

}  // namespace
}  // namespace arbiter::usage::usage_ledger_test
