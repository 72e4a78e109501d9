// The GCRA bucket: the whole limit at once, refill at limit/period, waits
// that are exact, debt, and give-backs that never overfill.
#include "core/quota/gcra.hpp"

#include <gtest/gtest.h>

#include <random>

namespace arbiter::quota {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);

TEST(Gcra, TheWholeLimitIsUsableAtOnceAndRefillsLinearly) {
  Gcra g(600, std::chrono::minutes(1));  // 10 per second
  EXPECT_DOUBLE_EQ(g.remaining(t0), 600);
  g.take(t0, 600);
  EXPECT_NEAR(g.remaining(t0), 0, 1e-6);
  EXPECT_EQ(g.wait_for(t0, 1), milliseconds(100));
  EXPECT_EQ(g.wait_for(t0, 10), seconds(1));
  EXPECT_NEAR(g.remaining(t0 + seconds(3)), 30, 1e-6);
  EXPECT_EQ(g.until_full(t0), std::chrono::minutes(1));
  EXPECT_EQ(g.wait_for(t0 + seconds(1), 10), Duration::zero());
}

TEST(Gcra, MoreThanTheLimitNeverFits) {
  Gcra g(100, std::chrono::minutes(1));
  EXPECT_EQ(g.wait_for(t0, 100), Duration::zero());
  EXPECT_EQ(g.wait_for(t0, 101), Duration::max());
}

TEST(Gcra, DebtDelaysLaterTakes) {
  Gcra g(60, std::chrono::minutes(1));  // 1 per second
  g.take(t0, 90);                        // 30 over: in debt for 30 s
  EXPECT_DOUBLE_EQ(g.remaining(t0), 0);
  EXPECT_EQ(g.wait_for(t0, 1), seconds(31));
}

TEST(Gcra, GiveBackRestoresButNeverOverfills) {
  Gcra g(100, std::chrono::minutes(1));
  g.take(t0, 80);
  g.give_back(30);
  EXPECT_NEAR(g.remaining(t0), 50, 1e-6);
  // Once full again, a late give-back changes nothing.
  g.give_back(50);
  g.give_back(500);
  EXPECT_NEAR(g.remaining(t0), 100, 1e-6);
  g.take(t0, 100);
  EXPECT_NEAR(g.remaining(t0), 0, 1e-6);
}

// Property: over any window of one period, what a greedy client takes
// (taking whatever fits whenever it asks) is at most the limit plus what
// refills during that window.
TEST(Gcra, GreedyTakesStayWithinTheRate) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const double limit = std::uniform_real_distribution<double>(10, 10'000)(rng);
    Gcra g(limit, std::chrono::minutes(1));
    TimePoint now = t0;
    double taken = 0;
    const TimePoint end = t0 + std::chrono::minutes(5);
    while (now < end) {
      const double n = std::uniform_real_distribution<double>(1, limit / 4)(rng);
      if (g.wait_for(now, n) == Duration::zero()) {
        g.take(now, n);
        taken += n;
      }
      now += milliseconds(std::uniform_int_distribution<int>(1, 2'000)(rng));
    }
    // 5 minutes: the initial burst (limit) plus 5 minutes of refill.
    EXPECT_LE(taken, limit * 6 + 1e-6) << "limit " << limit;
    EXPECT_GE(taken, limit * 4) << "a greedy client should get most of it";
  }
}

}  // namespace
}  // namespace arbiter::quota
