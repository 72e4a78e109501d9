// GET /admin/usage's bodies: JSON with the range, grouping, rows and total;
// CSV with a header and one line per group, names quoted when they must be.
#include "gateway/admin/usage_report.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace arbiter::usage_report_test {
namespace {

using usage::Dimension;
using usage::ReportRow;

const usage::WallTime kMay1 = usage::WallTime{} + std::chrono::seconds(1'714'521'600);

UsageQuery query(std::vector<Dimension> by) {
  return {.from = kMay1, .to = kMay1 + std::chrono::hours(24), .group_by = std::move(by)};
}

std::vector<ReportRow> rows() {
  return {ReportRow{.group = {"ml", "m1"}, .totals = {.requests = 2, .prompt_tokens = 100, .completion_tokens = 20,
                                                      .cached_tokens = 64, .cost = 0.0125}},
          ReportRow{.group = {"web \"x\", y", "m1"},
                    .totals = {.requests = 1, .prompt_tokens = 7, .completion_tokens = 3, .cached_tokens = 0, .cost = 2}}};
}

TEST(UsageReport, JsonHasTheRangeTheGroupingTheRowsAndTheirTotal) {
  const std::string body = usage_json(query({Dimension::kTeam, Dimension::kModel}), rows());
  const auto doc = boost::json::parse(body).as_object();
  EXPECT_EQ(doc.at("from"), "2024-05-01T00:00:00Z");
  EXPECT_EQ(doc.at("to"), "2024-05-02T00:00:00Z");
  EXPECT_EQ(doc.at("group_by"), (boost::json::array{"team", "model"}));
  const auto& r = doc.at("rows").as_array();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (boost::json::object{{"team", "ml"}, {"model", "m1"}, {"requests", 2}, {"prompt_tokens", 100},
                                       {"completion_tokens", 20}, {"cached_tokens", 64}, {"cost", 0.0125}}));
  EXPECT_EQ(r[1].at("team"), "web \"x\", y");
  const auto& total = doc.at("total").as_object();
  EXPECT_EQ(total.at("requests"), 3);
  EXPECT_EQ(total.at("prompt_tokens"), 107);
  EXPECT_EQ(total.at("completion_tokens"), 23);
  EXPECT_EQ(total.at("cached_tokens"), 64);
  EXPECT_DOUBLE_EQ(total.at("cost").to_number<double>(), 2.0125);
  EXPECT_NE(body.find(R"("cost":0.0125)"), std::string::npos) << "plain decimals: " << body;
}

TEST(UsageReport, JsonWithNoUsageHasNoRowsAndAZeroTotal) {
  const auto doc = boost::json::parse(usage_json(query({Dimension::kTenant}), {})).as_object();
  EXPECT_TRUE(doc.at("rows").as_array().empty());
  EXPECT_EQ(doc.at("total").at("requests"), 0);
  EXPECT_EQ(doc.at("total").at("cost").to_number<double>(), 0);
}

TEST(UsageReport, CsvHasAHeaderAndOneLinePerGroup) {
  EXPECT_EQ(usage_csv(query({Dimension::kTeam, Dimension::kModel}), rows()),
            "team,model,requests,prompt_tokens,completion_tokens,cached_tokens,cost\n"
            "ml,m1,2,100,20,64,0.0125\n"
            "\"web \"\"x\"\", y\",m1,1,7,3,0,2\n");
  EXPECT_EQ(usage_csv(query({Dimension::kClass}), {}), "class,requests,prompt_tokens,completion_tokens,cached_tokens,cost\n");
}

}  // namespace
}  // namespace arbiter::usage_report_test
