// The prefix cache's hash index against std::unordered_map over random
// inserts and erases, with colliding homes (the table is small and nearly
// half full), so backward-shift deletion is exercised across wrap-around.
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "engine/block_index.hpp"

namespace arbiter::engine {
namespace {

TEST(EngineBlockIndex, AgreesWithAMapOverRandomInsertsAndErases) {
  constexpr std::uint32_t kMax = 64;
  BlockIndex index(kMax);
  std::unordered_map<std::uint64_t, std::uint32_t> model;
  std::mt19937_64 rng(3);
  for (int step = 0; step < 200'000; ++step) {
    const std::uint64_t hash = rng() % 150;  // few distinct keys: many hits and misses
    if (rng() % 2 == 0 && model.size() < kMax) {
      const auto block = static_cast<std::uint32_t>(rng() % 1000);
      const bool fresh = model.emplace(hash, block).second;
      ASSERT_EQ(index.insert(hash, block), fresh) << "step " << step;
    } else {
      model.erase(hash);
      index.erase(hash);
    }
    ASSERT_EQ(index.size(), model.size());
    const std::uint64_t probe = rng() % 150;
    const auto it = model.find(probe);
    const auto found = index.find(probe);
    ASSERT_EQ(found.has_value(), it != model.end()) << "step " << step << " key " << probe;
    if (found) {
      ASSERT_EQ(*found, it->second);
    }
  }
  for (const auto& [hash, block] : model) EXPECT_EQ(index.find(hash), block);
}

}  // namespace
}  // namespace arbiter::engine
