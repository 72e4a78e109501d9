// The in-process result store: scope checked, TTL, max-age, the byte bound
// under a fill of ten times its size (core/cache/result_store.hpp).
#include "core/cache/result_store.hpp"

#include <gtest/gtest.h>

#include <random>

namespace arbiter::cache::result_store_test {
namespace {

using Clock = ResultStore::Clock;
using std::chrono::seconds;

std::shared_ptr<const StoredAnswer> answer(std::size_t size) {
  return std::make_shared<StoredAnswer>(StoredAnswer{.raw = std::string(size, 'x')});
}

CacheKey key(uint64_t i) { return {i * 0x9e3779b97f4a7c15ULL + 1, i}; }

TEST(ResultStore, FindsOnlyInItsScopeAndModel) {
  ResultStore store(1 << 20);
  const auto t0 = Clock::time_point{};
  ASSERT_TRUE(store.put(key(1), "tenant:a", "m", answer(10), t0, seconds(60)));
  EXPECT_TRUE(store.find(key(1), "tenant:a", "m", t0));
  EXPECT_FALSE(store.find(key(1), "tenant:b", "m", t0));  // the same key from another tenant: a collision, refused
  EXPECT_FALSE(store.find(key(1), "tenant:a", "m2", t0));
  EXPECT_FALSE(store.find(key(2), "tenant:a", "m", t0));
}

TEST(ResultStore, EntriesExpireAndMaxAgeBoundsAHit) {
  ResultStore store(1 << 20);
  const auto t0 = Clock::time_point{};
  store.put(key(1), "s", "m", answer(10), t0, seconds(60));
  const auto hit = store.find(key(1), "s", "m", t0 + seconds(30));
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->age, seconds(30));
  EXPECT_FALSE(store.find(key(1), "s", "m", t0 + seconds(30), seconds(10)));
  EXPECT_FALSE(store.find(key(1), "s", "m", t0 + seconds(60)));
  EXPECT_EQ(store.entries(), 0u);  // the expired entry went on its lookup
  EXPECT_EQ(store.bytes(), 0u);
}

TEST(ResultStore, HoldsItsBoundUnderAFillOfTenTimesItsSize) {
  constexpr std::size_t kBound = 256 * 1024;
  ResultStore store(kBound, 4);
  std::mt19937 rng(3);
  std::size_t written = 0;
  uint64_t i = 0;
  while (written < 10 * kBound) {
    const std::size_t size = 100 + rng() % 4000;
    store.put(key(++i), "s", "m", answer(size), Clock::time_point{}, seconds(60));
    written += size;
    ASSERT_LE(store.bytes(), kBound);
  }
  EXPECT_GT(store.evictions(), 0u);
  EXPECT_GT(store.bytes(), kBound / 2);  // evicts only what it must
  EXPECT_TRUE(store.find(key(i), "s", "m", Clock::time_point{}));  // the newest stays
  EXPECT_FALSE(store.find(key(1), "s", "m", Clock::time_point{}));
}

TEST(ResultStore, AnEntryReadAtItsFirstHitIsReplacedInPlace) {
  ResultStore store(1 << 20);
  const auto t0 = Clock::time_point{};
  const auto raw = answer(500);
  store.put(key(1), "s", "m", raw, t0, seconds(60));
  const auto read = std::make_shared<StoredAnswer>(
      StoredAnswer{.answer = CachedAnswer{.content = "hi", .finish_reason = "stop"}});
  store.replace(key(1), answer(1).get(), read);  // not what it holds: nothing changes
  EXPECT_EQ(store.find(key(1), "s", "m", t0)->answer, raw);
  store.replace(key(1), raw.get(), read);
  EXPECT_EQ(store.find(key(1), "s", "m", t0)->answer, read);
  EXPECT_EQ(store.bytes(), read->bytes() + 2 + ResultStore::kEntryOverhead);
  store.erase(key(1));
  EXPECT_EQ(store.entries(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
}

TEST(ResultStore, AFlushDropsAModelsEntriesOrAll) {
  ResultStore store(1 << 20);
  const auto t0 = Clock::time_point{};
  store.put(key(1), "s", "m1", answer(10), t0, seconds(60));
  store.put(key(2), "s", "m2", answer(10), t0, seconds(60));
  store.put(key(3), "t", "m1", answer(10), t0, seconds(60));
  EXPECT_EQ(store.flush("m1"), 2u);
  EXPECT_FALSE(store.contains(key(1), t0));
  EXPECT_TRUE(store.contains(key(2), t0));
  EXPECT_EQ(store.flush(""), 1u);
  EXPECT_EQ(store.entries(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
}

TEST(ResultStore, LeastRecentlyUsedGoesFirstAndTooLargeIsRefused) {
  const std::size_t each = answer(1000)->bytes() + 2 + ResultStore::kEntryOverhead;
  ResultStore store(3 * each, 1);
  const auto t0 = Clock::time_point{};
  for (uint64_t i = 1; i <= 3; ++i) store.put(key(i), "s", "m", answer(1000), t0, seconds(60));
  ASSERT_TRUE(store.find(key(1), "s", "m", t0));  // 1 used: 2 is now the oldest
  store.put(key(4), "s", "m", answer(1000), t0, seconds(60));
  EXPECT_TRUE(store.contains(key(1), t0));
  EXPECT_FALSE(store.contains(key(2), t0));
  EXPECT_FALSE(store.put(key(5), "s", "m", answer(4 * each), t0, seconds(60)));
  // A key put again replaces its entry, counted once.
  store.put(key(4), "s", "m", answer(1000), t0, seconds(60));
  EXPECT_EQ(store.entries(), 3u);
}

}  // namespace
}  // namespace arbiter::cache::result_store_test
