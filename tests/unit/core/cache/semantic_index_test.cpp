// The semantic index (core/cache/semantic_index.hpp): the nearest prompt of
// the asking scope above the threshold, never another scope's, within its
// byte bound (the oldest out first), and started over when the model's
// dimensions change.
#include "core/cache/semantic_index.hpp"

#include <gtest/gtest.h>

#include <random>

namespace arbiter::cache {
namespace {

std::vector<float> random_unit(std::mt19937& rng, std::size_t dims) {
  std::normal_distribution<float> d;
  std::vector<float> v(dims);
  for (float& x : v) x = d(rng);
  normalize(v);
  return v;
}

// `v` moved a little: its cosine with `v` about 1 - spread^2 / 2.
std::vector<float> nudged(std::mt19937& rng, const std::vector<float>& v, float spread) {
  std::normal_distribution<float> d(0, spread / std::sqrt(static_cast<float>(v.size())));
  std::vector<float> out = v;
  for (float& x : out) x += d(rng);
  normalize(out);
  return out;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0;
  for (std::size_t i = 0; i < a.size(); ++i) dot += static_cast<double>(a[i]) * b[i];
  return dot;
}

TEST(SemanticIndex, FindsTheNearestOfItsScopeAboveTheThresholdOnly) {
  std::mt19937 rng(1);
  SemanticIndex index(8 << 20);
  std::vector<std::vector<float>> kept;
  for (uint64_t i = 0; i < 500; ++i) {
    kept.push_back(random_unit(rng, 64));
    index.add(i % 2 == 0 ? 1 : 2, CacheKey{i, i}, kept.back());
  }
  int found = 0;
  for (uint64_t i = 0; i < 500; i += 7) {
    const std::vector<float> asked = nudged(rng, kept[i], 0.2f);
    const uint64_t scope = i % 2 == 0 ? 1 : 2;
    const auto hit = index.find(scope, asked, 0.95);
    if (hit) {
      ++found;
      EXPECT_EQ(hit->key.hi % 2, i % 2) << "another scope's prompt";
      EXPECT_NEAR(hit->similarity, cosine(asked, kept[hit->key.hi]), 1e-4);
      EXPECT_GE(hit->similarity, 0.95);
    }
    // The other scope never finds it, however near.
    const auto other = index.find(scope == 1 ? 2 : 1, asked, 0.95);
    if (other) {
      EXPECT_NE(other->key.hi, i);
    }
    // A random prompt is nowhere near anything.
    EXPECT_FALSE(index.find(scope, random_unit(rng, 64), 0.95));
  }
  EXPECT_GE(found, 60);  // of 72: the graph is approximate, a miss is allowed, a wrong hit is not
  // The same vector scaled: the same direction (the index normalizes).
  std::vector<float> scaled = kept[10];
  for (float& x : scaled) x *= 3;
  const auto same = index.find(1, scaled, 0.999);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->key.hi, 10u);
}

TEST(SemanticIndex, HoldsItsByteBoundTheOldestOutFirst) {
  std::mt19937 rng(2);
  const std::size_t bound = 64 * SemanticIndex::entry_bytes(32);
  SemanticIndex index(bound);
  std::vector<std::vector<float>> kept;
  for (uint64_t i = 0; i < 1000; ++i) {
    kept.push_back(random_unit(rng, 32));
    index.add(7, CacheKey{i, i}, kept.back());
    ASSERT_LE(index.bytes(), bound);
  }
  EXPECT_EQ(index.capacity(), 64u);
  EXPECT_EQ(index.entries(), 64u);
  const auto newest = index.find(7, kept[999], 0.999);
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->key.hi, 999u);
  const auto oldest = index.find(7, kept[0], 0.999);
  EXPECT_FALSE(oldest && oldest->key.hi == 0u);  // its place was taken
}

TEST(SemanticIndex, AnotherModelsDimensionsStartItOverAndZeroIsNotKept) {
  std::mt19937 rng(3);
  SemanticIndex index(1 << 20);
  const std::vector<float> a = random_unit(rng, 16);
  index.add(1, CacheKey{1, 1}, a);
  EXPECT_EQ(index.entries(), 1u);
  EXPECT_FALSE(index.find(1, random_unit(rng, 8), 0.5));  // other dimensions: nothing to compare
  index.add(1, CacheKey{2, 2}, random_unit(rng, 8));
  EXPECT_EQ(index.entries(), 1u);
  EXPECT_FALSE(index.find(1, a, 0.9));
  index.add(1, CacheKey{3, 3}, std::vector<float>(8, 0.0f));
  EXPECT_EQ(index.entries(), 1u);
  EXPECT_FALSE(index.find(1, std::vector<float>(8, 0.0f), 0.0));
  index.clear();
  EXPECT_EQ(index.entries(), 0u);
  EXPECT_EQ(index.bytes(), 0u);
}

}  // namespace
}  // namespace arbiter::cache
