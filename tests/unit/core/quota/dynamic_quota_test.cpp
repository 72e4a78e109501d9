// The BRIEF's dynamic quota: members x per_member x complexity x
// (1 + min(0.5 x std / mean, 0.3)) over the team's last 24 hours.
#include "core/quota/dynamic_quota.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace arbiter::quota {
namespace {

// 24 hours alternating between `a` and `b`: mean (a+b)/2, std |a-b|/2.
std::vector<double> alternating(double a, double b) {
  std::vector<double> hours;
  for (int i = 0; i < 24; ++i) hours.push_back(i % 2 ? b : a);
  return hours;
}

TEST(DynamicQuota, ASteadyTeamGetsItsSizeTimesComplexity) {
  const std::vector<double> steady(24, 1000);
  // 4 x 50 x 1.5 x (1 + 0): std 0.
  EXPECT_DOUBLE_EQ(dynamic_quota({.members = 4, .complexity = 1.5, .hourly_usage = steady}), 300);
  EXPECT_DOUBLE_EQ(dynamic_quota({.members = 4, .per_member = 10, .complexity = 2, .hourly_usage = steady}), 80);
}

TEST(DynamicQuota, BurstinessAddsHalfTheCoefficientOfVariation) {
  // 80 and 120: mean 100, std 20, 0.5 x 0.2 = 0.1: 10 x 50 x 1 x 1.1.
  const auto hours = alternating(80, 120);
  EXPECT_NEAR(dynamic_quota({.members = 10, .hourly_usage = hours}), 550, 1e-9);
  // Four hours 90, 110, 100, 100: mean 100, population variance
  // (100 + 100 + 0 + 0) / 4 = 50, std 7.0711 (the sample std would be 8.165).
  const std::vector<double> four{90, 110, 100, 100};
  EXPECT_NEAR(burst_factor(four), 1 + 0.5 * std::sqrt(50.0) / 100, 1e-12);
}

TEST(DynamicQuota, TheBurstBonusIsCappedAt30Percent) {
  // 0 and 200: mean 100, std 100: 0.5 x 1 = 0.5, capped at 0.3.
  EXPECT_DOUBLE_EQ(burst_factor(alternating(0, 200)), 1.3);
  EXPECT_DOUBLE_EQ(dynamic_quota({.members = 2, .hourly_usage = alternating(0, 200)}), 130);
  // Just under the cap: 40 and 160, std 60, 0.5 x 0.6 = 0.3 exactly.
  EXPECT_NEAR(burst_factor(alternating(40, 160)), 1.3, 1e-12);
  EXPECT_NEAR(burst_factor(alternating(45, 155)), 1 + 0.5 * 55 / 100, 1e-12);
  // One busy hour in 24: the cap again.
  std::vector<double> spike(24, 0);
  spike[23] = 5000;
  EXPECT_DOUBLE_EQ(burst_factor(spike), 1.3);
}

TEST(DynamicQuota, NoHistoryMeansNoBurstFactor) {
  EXPECT_DOUBLE_EQ(burst_factor({}), 1);
  EXPECT_DOUBLE_EQ(burst_factor(std::vector<double>(24, 0)), 1);  // mean 0
  EXPECT_DOUBLE_EQ(dynamic_quota({.members = 3, .complexity = 2}), 300);
  EXPECT_DOUBLE_EQ(dynamic_quota({.members = 0, .hourly_usage = alternating(0, 200)}), 0);
}

}  // namespace
}  // namespace arbiter::quota
