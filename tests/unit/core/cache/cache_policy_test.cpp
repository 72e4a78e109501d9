// Which requests the result cache answers and keeps, and the client's
// cache-control (core/cache/cache_policy.hpp).
#include "core/cache/cache_policy.hpp"

#include <gtest/gtest.h>

#include "core/request_parser.hpp"

namespace arbiter::cache {
namespace {

CacheUse use_of(std::string body, std::string_view cache_control = "", bool tools_allowed = false) {
  auto parsed = parse_request(Route::kChatCompletions, std::move(body));
  EXPECT_TRUE(parsed.has_value());
  return decide_cache_use(parsed->info, read_cache_control(cache_control), true, tools_allowed);
}

constexpr std::string_view kMessages = R"("messages":[{"role":"user","content":"hi"}])";

std::string body(std::string_view extra) { return "{\"model\":\"m\"," + std::string(kMessages) + std::string(extra) + "}"; }

TEST(CachePolicy, OnlyRepeatableRequestsByDefault) {
  EXPECT_TRUE(use_of(body(R"(,"temperature":0)")).lookup);
  EXPECT_TRUE(use_of(body(R"(,"temperature":0.0)")).store);
  EXPECT_TRUE(use_of(body(R"(,"temperature":0.7,"seed":42)")).lookup);
  EXPECT_EQ(use_of(body("")).skipped, "sampled");  // the default temperature samples
  EXPECT_EQ(use_of(body(R"(,"temperature":0.2)")).skipped, "sampled");
  EXPECT_EQ(use_of(body(R"(,"temperature":0,"n":2)")).skipped, "choices");
  EXPECT_EQ(use_of(body(R"(,"temperature":0,"logprobs":true)")).skipped, "logprobs");
  EXPECT_TRUE(use_of(body(R"(,"temperature":0,"logprobs":false)")).lookup);
  EXPECT_EQ(use_of(body(R"(,"temperature":0,"tools":[{"type":"function"}])")).skipped, "tools");
  EXPECT_TRUE(use_of(body(R"(,"temperature":0,"tools":[{"type":"function"}])"), "", true).lookup);
  EXPECT_TRUE(use_of(body(R"(,"temperature":0,"tools":null)")).lookup);
  EXPECT_EQ(use_of(body(R"(,"temperature":0,"functions":[{}])")).skipped, "tools");
}

TEST(CachePolicy, TheClientsCacheControl) {
  const std::string greedy = body(R"(,"temperature":0)");
  CacheUse u = use_of(greedy, "no-cache");
  EXPECT_FALSE(u.lookup);
  EXPECT_TRUE(u.store);
  u = use_of(greedy, "No-Store");
  EXPECT_FALSE(u.lookup || u.store);
  EXPECT_EQ(u.skipped, "no_store");
  // max-age opts a sampled request in.
  EXPECT_TRUE(use_of(body(""), "max-age=60").lookup);
  EXPECT_EQ(use_of(body(""), "max-age=abc").skipped, "sampled");
}

TEST(CachePolicy, ReadsCacheControlAsRfc9111WritesIt) {
  CacheDirectives d = read_cache_control(" no-cache , max-age=\"30\", private");
  EXPECT_TRUE(d.no_cache);
  EXPECT_FALSE(d.no_store);
  EXPECT_EQ(d.max_age_s, 30);
  d = read_cache_control("max-age=-1,no-store");
  EXPECT_FALSE(d.max_age_s);
  EXPECT_TRUE(d.no_store);
  EXPECT_FALSE(read_cache_control("").no_cache);
  EXPECT_EQ(read_cache_control("MAX-AGE=0").max_age_s, 0);
}

TEST(CachePolicy, AnEmbeddingIsRepeatableWhateverItsTemperature) {
  auto parsed = parse_request(Route::kEmbeddings, R"({"model":"e","input":"hi"})");
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(decide_cache_use(parsed->info, {}, true, false).lookup);
}

TEST(CachePolicy, DisabledSkipsEverything) {
  auto parsed = parse_request(Route::kChatCompletions, body(R"(,"temperature":0)"));
  ASSERT_TRUE(parsed);
  const CacheUse u = decide_cache_use(parsed->info, {}, false, false);
  EXPECT_FALSE(u.lookup || u.store);
  EXPECT_EQ(u.skipped, "disabled");
}

}  // namespace
}  // namespace arbiter::cache
