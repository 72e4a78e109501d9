// The usage report's rows: a range's buckets added up per group of
// dimensions, ordered by group.
#include "core/usage_ledger/usage_grouping.hpp"

#include <gtest/gtest.h>

namespace arbiter::usage {
namespace {

using std::chrono::hours;

const WallTime kMay1 = WallTime{} + std::chrono::seconds(1'714'521'600);

// alpha and beta in team ml, gamma in web; a few requests over two hours.
UsageLedger ledger() {
  UsageLedger l(Names{.tenants = {"alpha", "beta", "gamma"},
                      .teams = {"ml", "ml", "web"},
                      .models = {"m1", "m2"},
                      .classes = {"chat", "batch"}});
  auto req = [](uint64_t prompt, double cost) {
    return UsageTotals{.requests = 1, .prompt_tokens = prompt, .completion_tokens = 1, .cached_tokens = 0, .cost = cost};
  };
  l.record(kMay1, {.tenant = 0, .model = 0, .klass = 0}, req(10, 1));
  l.record(kMay1, {.tenant = 1, .model = 1, .klass = 1}, req(20, 2));
  l.record(kMay1 + hours(1), {.tenant = 2, .model = 0, .klass = 0}, req(40, 4));
  l.record(kMay1 + hours(1), {.tenant = 0, .model = 1, .klass = 0}, req(80, 8));
  return l;
}

// "group values: requests prompt cost" per row.
std::vector<std::string> rows(const std::vector<ReportRow>& report) {
  std::vector<std::string> out;
  for (const ReportRow& r : report) {
    std::string line;
    for (const std::string& v : r.group) line += v + " ";
    out.push_back(line + ": " + std::to_string(r.totals.requests) + " " + std::to_string(r.totals.prompt_tokens) + " " +
                  std::to_string(static_cast<int>(r.totals.cost)));
  }
  return out;
}

TEST(UsageGrouping, EachDimensionGroupsTheBucketsOfTheRange) {
  const UsageLedger l = ledger();
  const WallTime from = kMay1, to = kMay1 + hours(2);
  const Dimension tenant[] = {Dimension::kTenant}, team[] = {Dimension::kTeam};
  const Dimension model[] = {Dimension::kModel}, klass[] = {Dimension::kClass};
  EXPECT_EQ(rows(group_usage(l, from, to, tenant)),
            (std::vector<std::string>{"alpha : 2 90 9", "beta : 1 20 2", "gamma : 1 40 4"}));
  EXPECT_EQ(rows(group_usage(l, from, to, team)), (std::vector<std::string>{"ml : 3 110 11", "web : 1 40 4"}));
  EXPECT_EQ(rows(group_usage(l, from, to, model)), (std::vector<std::string>{"m1 : 2 50 5", "m2 : 2 100 10"}));
  EXPECT_EQ(rows(group_usage(l, from, to, klass)), (std::vector<std::string>{"batch : 1 20 2", "chat : 3 130 13"}));
}

TEST(UsageGrouping, SeveralDimensionsAndTheRangeLimitTheRows) {
  const UsageLedger l = ledger();
  const Dimension team_model[] = {Dimension::kTeam, Dimension::kModel};
  EXPECT_EQ(rows(group_usage(l, kMay1, kMay1 + hours(2), team_model)),
            (std::vector<std::string>{"ml m1 : 1 10 1", "ml m2 : 2 100 10", "web m1 : 1 40 4"}));
  EXPECT_EQ(rows(group_usage(l, kMay1 + hours(1), kMay1 + hours(2), team_model)),
            (std::vector<std::string>{"ml m2 : 1 80 8", "web m1 : 1 40 4"}));
  EXPECT_TRUE(group_usage(l, kMay1 + hours(2), kMay1 + hours(5), team_model).empty());
}

TEST(UsageGrouping, DimensionsByName) {
  for (const Dimension d : {Dimension::kTenant, Dimension::kTeam, Dimension::kModel, Dimension::kClass}) {
    EXPECT_EQ(dimension_named(dimension_name(d)), d);
  }
  EXPECT_EQ(dimension_name(Dimension::kClass), "class");
  EXPECT_FALSE(dimension_named("backend").has_value());
  EXPECT_FALSE(dimension_named("").has_value());
}

}  // namespace
}  // namespace arbiter::usage
