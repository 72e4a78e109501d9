// GET /admin/usage's parameters: times as RFC 3339 or unix seconds, the
// range widened to whole hours, the grouping and the format, and a clear
// message for each mistake.
#include "gateway/admin/usage_query.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace arbiter {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using usage::Dimension;
using usage::WallTime;

const WallTime kMay1 = WallTime{} + seconds(1'714'521'600);  // 2024-05-01T00:00:00Z

std::string error_of(std::string_view query) {
  const auto q = parse_usage_query(query, kMay1);
  return q ? "(none)" : q.error();
}

TEST(UsageQuery, TimesAreRfc3339OrUnixSeconds) {
  EXPECT_EQ(parse_wall_time("1714521600"), kMay1);
  EXPECT_EQ(parse_wall_time("0"), WallTime{});
  EXPECT_EQ(parse_wall_time("2024-05-01T00:00:00Z"), kMay1);
  EXPECT_EQ(parse_wall_time("2024-05-01t10:20:30z"), kMay1 + hours(10) + minutes(20) + seconds(30));
  EXPECT_EQ(parse_wall_time("2024-05-01T02:00:00+02:00"), kMay1);
  EXPECT_EQ(parse_wall_time("2024-04-30T19:30:00-04:30"), kMay1);
  EXPECT_EQ(parse_wall_time("2024-05-01T00:00:00.25Z"), kMay1 + std::chrono::milliseconds(250));
  EXPECT_EQ(parse_wall_time("2024-05-01T00:00:00.1234567891Z"), kMay1 + std::chrono::nanoseconds(123456789));
  EXPECT_EQ(parse_wall_time("2024-02-29T00:00:00Z"), kMay1 - std::chrono::days(62));  // a leap day
  for (const char* bad : {"", "-5", "+5", "1e9", "12.5", "99999999999", "2024-05-01", "2024-05-01T00:00:00",
                          "2024-05-01 00:00:00Z", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
                          "2024-05-01T24:00:00Z", "2024-05-01T00:60:00Z", "2024-05-01T00:00:60Z",
                          "2024-05-01T00:00:00.Z", "2024-05-01T00:00:00+2:00", "2024-05-01T00:00:00+02:60",
                          "2024-05-01T00:00:00Zjunk", "1969-12-31T23:59:59Z", "2200-01-01T00:00:01Z", "today"}) {
    EXPECT_FALSE(parse_wall_time(bad).has_value()) << bad;
  }
  EXPECT_EQ(format_wall_time(kMay1 + hours(13) + std::chrono::milliseconds(999)), "2024-05-01T13:00:00Z");
}

TEST(UsageQuery, TimesAreWrittenInUtcWhateverTheLocalZone) {
  const char* before = std::getenv("TZ");
  const std::string saved = before ? before : "";
  ::setenv("TZ", "XYZ-5:30", 1);  // 5 h 30 east of UTC (POSIX form: no tzdata needed)
  ::tzset();
  const std::string written = format_wall_time(kMay1 + hours(23));
  before ? ::setenv("TZ", saved.c_str(), 1) : ::unsetenv("TZ");
  ::tzset();
  EXPECT_EQ(written, "2024-05-01T23:00:00Z");
}

TEST(UsageQuery, DefaultsAreTheLast24HoursByTenantAsJson) {
  const WallTime now = kMay1 + minutes(90);
  const auto q = parse_usage_query("", now);
  ASSERT_TRUE(q) << q.error();
  // 01:30 yesterday .. 01:30 today, widened to whole hours.
  EXPECT_EQ(q->from, kMay1 - hours(23));
  EXPECT_EQ(q->to, kMay1 + hours(2));
  EXPECT_EQ(q->group_by, (std::vector<Dimension>{Dimension::kTenant}));
  EXPECT_EQ(q->format, UsageQuery::Format::kJson);
}

TEST(UsageQuery, TheRangeIsWidenedToWholeHours) {
  const auto q = parse_usage_query("from=2024-05-01T10:59:59Z&to=1714561201", kMay1);  // to: 11:00:01
  ASSERT_TRUE(q) << q.error();
  EXPECT_EQ(q->from, kMay1 + hours(10));
  EXPECT_EQ(q->to, kMay1 + hours(12));
  const auto exact = parse_usage_query("from=2024-05-01T10:00:00Z&to=2024-05-01T11:00:00Z", kMay1);
  ASSERT_TRUE(exact) << exact.error();
  EXPECT_EQ(exact->to - exact->from, hours(1));
  // Only `from`: up to now.
  const auto since = parse_usage_query("from=2024-04-30T00:00:00Z", kMay1 + minutes(10));
  ASSERT_TRUE(since) << since.error();
  EXPECT_EQ(since->to, kMay1 + hours(1));
}

TEST(UsageQuery, TheQueryEndsWhereItsViewEnds) {
  // A view into the request's head, the rest of the line after it.
  const std::string head = "format=csv HTTP/1.1\r\nHost: x\r\n\r\n";
  const auto q = parse_usage_query(std::string_view(head).substr(0, 10), kMay1);
  ASSERT_TRUE(q) << q.error();
  EXPECT_EQ(q->format, UsageQuery::Format::kCsv);
}

TEST(UsageQuery, OffsetsMayComeEncodedOrNot) {
  for (const char* query : {"from=2024-05-01T12:00:00+02:00", "from=2024-05-01T12:00:00%2B02:00",
                            "from=2024-05-01T12%3A00%3A00%2B02%3A00"}) {
    const auto q = parse_usage_query(query, kMay1 + hours(12));
    ASSERT_TRUE(q) << query << ": " << q.error();
    EXPECT_EQ(q->from, kMay1 + hours(10)) << query;
  }
}

TEST(UsageQuery, GroupByOneOrSeveralDimensionsAndCsv) {
  const auto q = parse_usage_query("group_by=team,model,class&format=csv", kMay1);
  ASSERT_TRUE(q) << q.error();
  EXPECT_EQ(q->group_by, (std::vector<Dimension>{Dimension::kTeam, Dimension::kModel, Dimension::kClass}));
  EXPECT_EQ(q->format, UsageQuery::Format::kCsv);
  EXPECT_EQ(parse_usage_query("format=json&group_by=class", kMay1)->format, UsageQuery::Format::kJson);
}

TEST(UsageQuery, MistakesAreNamed) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"from=yesterday", "from: 'yesterday' is not an RFC 3339 time (2024-05-01T10:00:00Z) or unix seconds"},
      {"to=2024-05-01", "to: '2024-05-01' is not an RFC 3339 time (2024-05-01T10:00:00Z) or unix seconds"},
      {"from=1714525200&to=1714521600", "from must be before to"},
      {"from=1714521600&to=1714521600", "from must be before to"},
      {"group_by=backend", "group_by: 'backend' is not tenant, team, model or class"},
      {"group_by=team,", "group_by: '' is not tenant, team, model or class"},
      {"group_by=team,team", "group_by: 'team' twice"},
      {"format=xml", "format: 'xml' is not json or csv"},
      {"format", "format: '' is not json or csv"},
      {"from=1&from=2", "from: given twice"},
      {"grup_by=team", "unknown parameter 'grup_by' (from, to, group_by, format)"},
      {"format=csv&&", "unknown parameter '' (from, to, group_by, format)"},
      {"from=%zz", "the query is not percent-encoded text"},
      {"format=csv%2", "the query is not percent-encoded text"},
      {"format=%", "the query is not percent-encoded text"},
  };
  for (const auto& [query, message] : cases) EXPECT_EQ(error_of(query), message) << query;
}

}  // namespace
}  // namespace arbiter
