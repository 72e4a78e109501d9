// The weighted draw of an alias's target: shares within noise of the
// weights over many keys, the same key the same target, idle sides none.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/rollout/traffic_split.hpp"

namespace arbiter::rollout {
namespace {

TEST(TrafficSplit, SharesFollowTheWeightsOverRandomKeysAndWeights) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 20; ++round) {
    std::vector<double> weights;
    const int n = 2 + round % 3;
    double total = 0;
    for (int i = 0; i < n; ++i) {
      weights.push_back(std::uniform_real_distribution<double>(0, 100)(rng));
      total += weights.back();
    }
    std::vector<int> hits(weights.size());
    constexpr int kKeys = 40'000;
    for (int k = 0; k < kKeys; ++k) ++hits[pick_target(weights, sticky_hash("chat", std::to_string(rng())))];
    for (std::size_t i = 0; i < weights.size(); ++i) {
      const double expected = weights[i] / total;
      // Four standard deviations of a binomial share, plus a little.
      const double tolerance = 4 * std::sqrt(expected * (1 - expected) / kKeys) + 0.002;
      EXPECT_NEAR(static_cast<double>(hits[i]) / kKeys, expected, tolerance) << "round " << round << " target " << i;
    }
  }
}

TEST(TrafficSplit, AKeyStaysOnItsSideAndAZeroWeightTakesNothing) {
  const std::vector<double> canary{95, 5};
  for (int k = 0; k < 1000; ++k) {
    const uint64_t h = sticky_hash("chat", "session-" + std::to_string(k));
    EXPECT_EQ(pick_target(canary, h), pick_target(canary, h));
  }
  const std::vector<double> blue_green{0, 100};
  for (int k = 0; k < 1000; ++k) EXPECT_EQ(pick_target(blue_green, sticky_hash("chat", std::to_string(k))), 1u);
  // Another alias splits the same key independently.
  int differ = 0;
  const std::vector<double> half{50, 50};
  for (int k = 0; k < 1000; ++k) {
    const std::string key = std::to_string(k);
    differ += pick_target(half, sticky_hash("a", key)) != pick_target(half, sticky_hash("b", key));
  }
  EXPECT_GT(differ, 350);
  EXPECT_LT(differ, 650);
}

TEST(TrafficSplit, RaisingTheCanaryMovesOnlyStableKeysToIt) {
  // A key on the canary at 5% stays there at 25%: sessions already moved
  // do not flap back as a rollout proceeds.
  for (int k = 0; k < 2000; ++k) {
    const uint64_t h = sticky_hash("chat", std::to_string(k));
    const std::vector<double> at5{5, 95}, at25{25, 75};
    if (pick_target(at5, h) == 0) {
      EXPECT_EQ(pick_target(at25, h), 0u);
    }
  }
}

}  // namespace
}  // namespace arbiter::rollout
