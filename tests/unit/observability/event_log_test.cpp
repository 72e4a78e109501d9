#include "observability/event_log.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include <boost/json/parse.hpp>

namespace arbiter::event_log_test {
namespace {

boost::json::object parsed(const std::string& line) {
  EXPECT_TRUE(line.ends_with("}\n")) << line;
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line: " << line;
  return boost::json::parse(line).as_object();
}

TEST(EventLog, HostileValuesCannotForgeAFieldOrALine) {
  const std::string hostile[] = {
      R"(x","level":"info","admin":"yes)",
      "two\nlines\r\n{\"event\":\"forged\"}",
      "back\\slash \" quote \t tab \x01\x1f control",
      std::string("nul\0inside", 10),
      "caf\xc3\xa9 \xe2\x9c\x93",
  };
  for (const std::string& value : hostile) {
    const std::string line = event_line(EventLevel::kWarn, "health_probe_failed", {{"backend", "b1"}, {"why", value}});
    const boost::json::object o = parsed(line);
    EXPECT_EQ(o.size(), 4u) << line;
    EXPECT_EQ(o.at("level"), "warn");
    EXPECT_EQ(o.at("event"), "health_probe_failed");
    EXPECT_EQ(o.at("backend"), "b1");
    EXPECT_EQ(std::string(o.at("why").as_string()), value) << line;
  }
}

TEST(EventLog, NumbersFlagsAndWhatJsonCannotHold) {
  const std::string line =
      event_line(EventLevel::kInfo, "started",
                 {{"threads", 4u}, {"signal", -15}, {"big", std::numeric_limits<uint64_t>::max()}, {"tls", false},
                  {"rate", 0.125}, {"nan", std::numeric_limits<double>::quiet_NaN()}},
                 3);
  const boost::json::object o = parsed(line);
  EXPECT_EQ(o.at("threads").to_number<int64_t>(), 4);
  EXPECT_EQ(o.at("signal").to_number<int64_t>(), -15);
  EXPECT_EQ(o.at("big").as_uint64(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(o.at("tls"), false);
  EXPECT_EQ(o.at("rate").to_number<double>(), 0.125);
  EXPECT_TRUE(o.at("nan").is_null()) << line;
  EXPECT_EQ(o.at("suppressed").to_number<int64_t>(), 3);
}

TEST(EventLog, EachKindWritesAtMostItsRateASecondAndSaysHowManyItHeldBack) {
  EventRateLimit limit;
  uint64_t held = 99;
  for (uint32_t i = 0; i < kEventLinesPerSecond; ++i) {
    ASSERT_TRUE(limit.admit("flood", 100, held)) << i;
    EXPECT_EQ(held, 0u);
  }
  for (int i = 0; i < 25; ++i) EXPECT_FALSE(limit.admit("flood", 100, held));
  EXPECT_TRUE(limit.admit("other", 100, held)) << "kinds are counted apart";
  EXPECT_EQ(held, 0u);
  ASSERT_TRUE(limit.admit("flood", 101, held)) << "a new second";
  EXPECT_EQ(held, 25u) << "the first line after says what was held back";
  ASSERT_TRUE(limit.admit("flood", 101, held));
  EXPECT_EQ(held, 0u);
}

}  // namespace
}  // namespace arbiter::event_log_test
