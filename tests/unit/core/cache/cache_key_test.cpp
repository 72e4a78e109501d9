// The result cache's key (core/cache/cache_key.hpp): what makes two
// requests the same, and that the scope always separates them.
#include "core/cache/cache_key.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "core/request_parser.hpp"

namespace arbiter::cache {
namespace {

CacheKey key_of(std::string body, std::string_view scope = "tenant:a", std::optional<int64_t> cap = std::nullopt,
                Route route = Route::kChatCompletions) {
  auto parsed = parse_request(route, std::move(body));
  EXPECT_TRUE(parsed.has_value());
  return cache_key({route, parsed->info.model, scope, cap}, parsed->text, parsed->top_keys());
}

const std::string kBody =
    R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":20})";

TEST(CacheKey, IgnoresKeyOrderSpacesAndHowTheAnswerIsDelivered) {
  const CacheKey base = key_of(kBody);
  EXPECT_EQ(key_of(R"({"max_tokens":20, "temperature" : 0 ,"model":"m","messages":[{"role":"user","content":"hi"}]})"),
            base);
  EXPECT_EQ(key_of(R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":20,"user":"u7"})"),
            base);
  EXPECT_EQ(key_of("  " + kBody + "\n"), base);
}

TEST(CacheKey, EveryOtherDifferenceIsAnotherKey) {
  const CacheKey base = key_of(kBody);
  EXPECT_NE(key_of(R"({"model":"m","messages":[{"role":"user","content":"hi!"}],"temperature":0,"max_tokens":20})"), base);
  EXPECT_NE(key_of(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":21})"), base);
  EXPECT_NE(key_of(R"({"model":"m2","messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":20})"), base);
  EXPECT_NE(key_of(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":20,"seed":1})"), base);
  EXPECT_NE(key_of(kBody, "tenant:b"), base);
  EXPECT_NE(key_of(kBody, "tenant:a", 10), base);
  const std::string both = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"prompt":"hi","temperature":0})";
  EXPECT_NE(key_of(both, "tenant:a", std::nullopt, Route::kCompletions),
            key_of(both, "tenant:a", std::nullopt, Route::kChatCompletions));
}

TEST(CacheKey, ABodyRewrittenOrWithEscapedKeysIsHashedWhole) {
  auto parsed = parse_request(Route::kChatCompletions, kBody);
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->top_keys().complete);
  apply_max_tokens_cap(*parsed, 5);
  EXPECT_FALSE(parsed->top_keys().complete);
  // An escaped key is not found in the text as written: whole-body hashing,
  // which still separates different bodies.
  auto escaped = parse_request(Route::kChatCompletions, R"({"mod\u0065l":"m","messages":[{"role":"user","content":"hi"}],"temperature":0})");
  ASSERT_TRUE(escaped);
  EXPECT_FALSE(escaped->top_keys().complete);
}

// Property: over random bodies and tenants, two keys are equal only when
// tenant and body (up to order and the ignored members) are equal.
TEST(CacheKey, RandomTenantsAndBodiesNeverShareAKey) {
  std::mt19937 rng(7);
  const std::vector<std::string> contents = {"hi", "hello", "what is 2+2", "what is 2+3", "Hi", "hi "};
  std::map<CacheKey, std::pair<std::size_t, std::size_t>> seen;  // key -> (tenant, content)
  std::set<std::pair<std::size_t, std::size_t>> pairs;
  for (int i = 0; i < 400; ++i) {
    const std::size_t tenant = rng() % 5;
    const std::size_t content = rng() % contents.size();
    const bool stream = rng() % 2;
    const std::string body = "{\"model\":\"m\"," + std::string(stream ? "\"stream\":true," : "") +
                             "\"messages\":[{\"role\":\"user\",\"content\":\"" + contents[content] +
                             "\"}],\"temperature\":0}";
    const CacheKey k = key_of(body, "tenant:t" + std::to_string(tenant));
    const auto [it, fresh] = seen.emplace(k, std::pair{tenant, content});
    if (!fresh) {
      EXPECT_EQ(it->second, (std::pair{tenant, content}));
    }
    pairs.insert({tenant, content});
  }
  EXPECT_EQ(seen.size(), pairs.size());  // one key per (tenant, content), streamed or not
}

}  // namespace
}  // namespace arbiter::cache
