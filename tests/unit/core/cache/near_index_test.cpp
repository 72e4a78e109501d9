// The near-duplicate index (core/cache/near_index.hpp): candidates only in
// their near scope, the most similar above the threshold, the byte bound.
#include "core/cache/near_index.hpp"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <map>
#include <random>

#include "core/request_parser.hpp"

namespace arbiter::cache {
namespace {

NearText text(std::string_view content) {
  boost::json::array m{boost::json::object{{"role", "user"}, {"content", content}}};
  return near_text(boost::json::serialize(m));
}

CacheKey key(uint64_t i) { return {i, i + 1}; }

TEST(NearIndex, FindsTheMostSimilarInItsScopeOnly) {
  NearIndex index(1 << 20);
  index.add(1, key(1), text("Explain how a hash table handles collisions in detail."));
  index.add(1, key(2), text("Explain how a hash table handles colilsions in detail."));
  index.add(2, key(3), text("Explain how a hash table handles collisions, in detail!"));
  const auto found = index.find(1, text("explain how a hash table handles collisions in detail"), 0.9);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->key, key(1));
  EXPECT_EQ(found->similarity, 1);
  EXPECT_EQ(index.find(2, text("explain how a hash table handles collisions in detail"), 0.9)->key, key(3));
  EXPECT_FALSE(index.find(3, text("explain how a hash table handles collisions in detail"), 0.9));
  EXPECT_FALSE(index.find(1, text("Explain how a hash table handles resizing in detail."), 0.5));
  index.clear();
  EXPECT_EQ(index.entries(), 0u);
  EXPECT_EQ(index.bytes(), 0u);
  EXPECT_FALSE(index.find(1, text("explain how a hash table handles collisions in detail"), 0.9));
}

TEST(NearIndex, HoldsItsByteBound) {
  const std::size_t bound = 64 * 1024;
  NearIndex index(bound);
  for (uint64_t i = 0; i < 2000; ++i) {
    index.add(1, key(i), text("Question number " + std::to_string(i) + " about the weather in Lisbon today"));
    ASSERT_LE(index.bytes(), bound);
  }
  EXPECT_LT(index.entries(), 2000u);
  EXPECT_TRUE(index.find(1, text("question number 1999 about the weather in lisbon today"), 0.9));  // the newest
  EXPECT_FALSE(index.find(1, text("question number 0 about the weather in lisbon today"), 0.9));   // the oldest went
}

// Random prompts over a few scopes in a table of few rows (buckets share
// rows, slots are reused, references go stale): a candidate is always of
// the scope asked, its prompt is the one kept under its key and near
// enough, and the prompt just kept is always found by its own words.
TEST(NearIndex, CandidatesAreAlwaysOfTheirScopeAndNearWhateverTheChurn) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> words = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"};
  const auto prompt = [&] {
    std::string p;
    for (int n = 3 + static_cast<int>(rng() % 4); n > 0; --n) p += words[rng() % words.size()] + " ";
    return p;
  };
  NearIndex index(16 * 1024);  // a few rows, a few dozen prompts
  std::map<CacheKey, std::pair<uint64_t, std::string>> kept;  // key: scope, prompt
  for (uint64_t i = 0; i < 5000; ++i) {
    const uint64_t scope = rng() % 3;
    const std::string p = prompt();
    index.add(scope, key(i), text(p));
    kept[key(i)] = {scope, p};
    ASSERT_LE(index.bytes(), 16u * 1024);
    const auto own = index.find(scope, text(p), 0.9);
    ASSERT_TRUE(own) << i;
    const uint64_t asked = rng() % 3;
    const std::string q = prompt();
    if (const auto found = index.find(asked, text(q), 0.9)) {
      const auto& [their_scope, their_prompt] = kept.at(found->key);
      ASSERT_EQ(their_scope, asked);
      ASSERT_GE(near_similarity(text(their_prompt), text(q)), 0.9);
    }
  }
}

TEST(CacheKeyParts, TheNearScopeIsTheKeyWithoutThePrompt) {
  const auto parts = [](std::string body, Route route = Route::kChatCompletions) {
    static std::vector<ParsedRequest> keep;  // the prompt view points into the body
    keep.push_back(*parse_request(route, std::move(body)));
    const ParsedRequest& p = keep.back();
    return cache_key_parts({route, p.info.model, "tenant:a", std::nullopt}, p.text, p.top_keys());
  };
  const auto a = parts(R"({"model":"m","messages":[{"role":"user","content":"hi there"}],"temperature":0})");
  const auto b = parts(R"({"model":"m","temperature":0,"messages":[{"role":"user","content":"Hi there!"}]})");
  const auto c = parts(R"({"model":"m","messages":[{"role":"user","content":"hi there"}],"temperature":0,"max_tokens":5})");
  EXPECT_NE(a.exact, b.exact);
  EXPECT_EQ(a.near_scope, b.near_scope);
  EXPECT_NE(a.near_scope, c.near_scope);
  EXPECT_EQ(a.prompt, R"([{"role":"user","content":"hi there"}])");
  EXPECT_EQ(parts(R"({"model":"m","prompt":"Once upon","temperature":0})", Route::kCompletions).prompt, "\"Once upon\"");
}

}  // namespace
}  // namespace arbiter::cache
