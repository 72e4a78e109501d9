// Adaptive capacity per backend: the controller grows the slot limit only
// while the limit holds work back and the engine shows room, shrinks it on
// each sign of overload, stays within its bounds and ignores noise.
#include "core/adaptive_capacity.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

namespace arbiter::sched {
namespace {

using namespace std::chrono_literals;
using Clock = CapacityController::Clock;

AdaptiveCapacityConfig config() {
  AdaptiveCapacityConfig c;
  c.enabled = true;
  c.min_limit = 8;
  c.max_limit = 256;
  c.interval = 200ms;
  c.min_gaps = 32;
  return c;
}

// One interval's inputs; the defaults are a backend that wants to grow.
struct Interval {
  double waiting = 0;
  double kv = 0.3;
  uint64_t gaps = 100;
  uint64_t within = 90;  // of `gaps`, within itl_target
  bool work_waiting = true;
  int in_flight = -1;  // -1: at the limit
};

class Driver {
 public:
  explicit Driver(AdaptiveCapacityConfig c = config(), uint32_t start = 64) : c_(c, start, now_) {}

  // Feeds one interval's figures and lets it decide; returns the new limit.
  uint32_t step(const Interval& i) {
    c_.engine(i.waiting, i.kv);
    c_.gaps(i.gaps, i.within);
    c_.occupancy(i.in_flight < 0 ? c_.limit() : static_cast<uint32_t>(i.in_flight), i.work_waiting);
    now_ += 200ms;
    c_.update(now_);
    return c_.limit();
  }
  uint32_t limit() const { return c_.limit(); }

 private:
  Clock::time_point now_{};
  CapacityController c_;
};

TEST(AdaptiveCapacity, StartsAtTheBackendsLimitWithinTheBounds) {
  EXPECT_EQ(Driver(config(), 64).limit(), 64u);
  EXPECT_EQ(Driver(config(), 2).limit(), 8u);
  EXPECT_EQ(Driver(config(), 1000).limit(), 256u);
}

TEST(AdaptiveCapacity, GrowsWhileTheLimitHoldsWorkBackAndTheEngineHasRoom) {
  Driver d;
  EXPECT_EQ(d.step({}), 72u);  // + 1/8
  EXPECT_EQ(d.step({}), 81u);
}

TEST(AdaptiveCapacity, DecidesOncePerInterval) {
  CapacityController c(config(), 64, Clock::time_point{});
  c.gaps(100, 100);
  c.occupancy(64, true);
  EXPECT_FALSE(c.update(Clock::time_point{} + 100ms));
  EXPECT_EQ(c.limit(), 64u);
  EXPECT_TRUE(c.update(Clock::time_point{} + 200ms));
  EXPECT_EQ(c.limit(), 72u);
}

TEST(AdaptiveCapacity, DoesNotGrowWithoutEachCondition) {
  EXPECT_EQ(Driver().step({.work_waiting = false}), 64u);  // nothing waits for a slot
  EXPECT_EQ(Driver().step({.in_flight = 40}), 64u);        // free slots: the limit is not the bottleneck
  EXPECT_EQ(Driver().step({.waiting = 2}), 64u);           // the engine queues itself
  EXPECT_EQ(Driver().step({.kv = 0.85}), 64u);             // between the KV thresholds: hold
  EXPECT_EQ(Driver().step({.gaps = 10, .within = 10}), 64u);  // too few gaps to judge
}

TEST(AdaptiveCapacity, ShrinksOnAFullKvCache) {
  Driver d;
  EXPECT_EQ(d.step({.kv = 0.95}), 57u);  // x 0.9
  // Even with nothing waiting and few slots in use: KV near full is always overload.
  EXPECT_EQ(d.step({.kv = 0.95, .gaps = 0, .within = 0, .work_waiting = false, .in_flight = 5}), 51u);
}

// Slow decode steps take back what growth added, down to the start (below
// it slow gaps are mostly prefill steps, which fewer slots do not speed up).
TEST(AdaptiveCapacity, ShrinksToItsStartWhenDecodeStepsAreSlowerThanTheTarget) {
  Driver d;
  d.step({});
  EXPECT_EQ(d.step({}), 81u);
  EXPECT_EQ(d.step({.gaps = 100, .within = 40}), 72u);  // the median gap over itl_target
  EXPECT_EQ(d.step({.gaps = 100, .within = 40}), 64u);
  EXPECT_EQ(d.step({.gaps = 100, .within = 0}), 64u);
}

// Below the start (after a full KV cache) slow gaps neither shrink it
// further nor lift it back to the start.
TEST(AdaptiveCapacity, SlowGapsLeaveALimitBelowItsStartAlone) {
  Driver d;
  EXPECT_EQ(d.step({.kv = 0.95}), 57u);
  EXPECT_EQ(d.step({.gaps = 100, .within = 10}), 57u);
}

TEST(AdaptiveCapacity, SlowGapsDoNotShrinkALimitNobodyReaches) {
  Driver d;
  d.step({});
  EXPECT_EQ(d.step({}), 81u);
  EXPECT_EQ(d.step({.gaps = 100, .within = 0, .in_flight = 20}), 81u);
}

TEST(AdaptiveCapacity, StaysWithinFloorAndCeiling) {
  Driver grow;
  for (int i = 0; i < 100; ++i) grow.step({});
  EXPECT_EQ(grow.limit(), 256u);
  Driver shrink;
  for (int i = 0; i < 100; ++i) shrink.step({.kv = 0.99});
  EXPECT_EQ(shrink.limit(), 8u);
}

// Noise: figures that flicker around one threshold at a time never move the
// limit far. KV flickering between the thresholds holds; gap shares just
// above the quantile grow (as they should) and just below shrink.
TEST(AdaptiveCapacity, StableUnderNoiseBetweenTheThresholds) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> kv(0.81, 0.89);
  Driver d;
  for (int i = 0; i < 500; ++i) d.step({.kv = kv(rng)});
  EXPECT_EQ(d.limit(), 64u);
}

// Property: whatever the inputs, the limit stays in [min, max], moves by at
// most one growth or backoff step per interval, and only grows when every
// growth condition held.
TEST(AdaptiveCapacity, PropertyBoundedStepsAndGrowthOnlyWhenAllowed) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> unit(0, 1);
  const AdaptiveCapacityConfig c = config();
  Driver d(c, 64);
  for (int i = 0; i < 20'000; ++i) {
    const uint32_t before = d.limit();
    Interval in{.waiting = unit(rng) < 0.2 ? 1.0 : 0.0,
                .kv = unit(rng),
                .gaps = static_cast<uint64_t>(unit(rng) * 200),
                .work_waiting = unit(rng) < 0.7,
                .in_flight = static_cast<int>(unit(rng) * 300)};
    in.within = static_cast<uint64_t>(unit(rng) * static_cast<double>(in.gaps));
    const uint32_t after = d.step(in);
    ASSERT_GE(after, c.min_limit);
    ASSERT_LE(after, c.max_limit);
    if (after > before) {
      ASSERT_LE(after, before + std::max(1u, static_cast<uint32_t>(before * c.growth)));
      ASSERT_EQ(in.waiting, 0);
      ASSERT_LT(in.kv, c.kv_grow_below);
      ASSERT_TRUE(in.work_waiting);
      ASSERT_GE(static_cast<uint32_t>(in.in_flight), before);
      ASSERT_GE(in.gaps, c.min_gaps);
      ASSERT_GE(static_cast<double>(in.within), c.itl_quantile * static_cast<double>(in.gaps));
    } else if (after < before) {
      ASSERT_GE(after, static_cast<uint32_t>(before * c.backoff) - 1);
      if (in.kv <= c.kv_shrink_above) {  // slow gaps: only back towards the start
        ASSERT_LT(static_cast<double>(in.within), c.itl_quantile * static_cast<double>(in.gaps));
        ASSERT_GE(after, 64u);
      }
    }
  }
}

TEST(AdaptiveCapacity, ValidateNamesWhatIsWrong) {
  EXPECT_EQ(validate(config()), nullptr);
  AdaptiveCapacityConfig c = config();
  c.max_limit = 4;
  EXPECT_NE(validate(c), nullptr);
  c = config();
  c.kv_grow_below = 0.95;
  EXPECT_NE(validate(c), nullptr);
  c = config();
  c.backoff = 1;
  EXPECT_NE(validate(c), nullptr);
}

}  // namespace
}  // namespace arbiter::sched
