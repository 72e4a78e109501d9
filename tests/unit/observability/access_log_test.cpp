// The access-log line: the tenant's team always; cached tokens with the
// engine's usage; engine time and cost only for requests that reached an
// engine (cost: of a priced model).
#include "observability/access_log.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace arbiter {
namespace {

boost::json::object line(const AccessRecord& r) {
  const std::string text = format_access_record(r);
  EXPECT_TRUE(text.ends_with("}\n"));
  return boost::json::parse(text).as_object();
}

TEST(AccessLog, ARequestThatRanCarriesItsTeamTokensEngineTimeAndCost) {
  const AccessRecord r{.tenant = "alpha", .team = "ml", .prompt_tokens = 40, .completion_tokens = 9,
                       .cached_tokens = 32, .engine_ms = 12.5, .cost = 1.25e-5};
  const auto o = line(r);
  EXPECT_EQ(o.at("tenant"), "alpha");
  EXPECT_EQ(o.at("team"), "ml");
  EXPECT_EQ(o.at("prompt_tokens"), 40);
  EXPECT_EQ(o.at("completion_tokens"), 9);
  EXPECT_EQ(o.at("cached_tokens"), 32);
  EXPECT_DOUBLE_EQ(o.at("engine_ms").to_number<double>(), 12.5);
  EXPECT_EQ(o.at("cost").to_number<double>(), 1.25e-5);  // exactly: the shortest text that reads back
}

TEST(AccessLog, ARefusedRequestHasNoTokensEngineTimeOrCost) {
  const AccessRecord r{.tenant = "beta", .team = "web", .status = 429};
  const auto o = line(r);
  EXPECT_EQ(o.at("team"), "web");
  for (const char* key : {"prompt_tokens", "completion_tokens", "cached_tokens", "engine_ms", "cost"}) {
    EXPECT_FALSE(o.contains(key)) << key;
  }
}

TEST(AccessLog, AnUnpricedModelHasEngineTimeButNoCost) {
  const AccessRecord r{.engine_ms = 3, .cost = -1};
  const auto o = line(r);
  EXPECT_TRUE(o.contains("engine_ms"));
  EXPECT_FALSE(o.contains("cost"));
}

}  // namespace
}  // namespace arbiter
