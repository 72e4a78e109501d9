// Adaptive capacity per backend: the controller grows the slot limit only
// while the limit holds background work back, no other work waits, and the
// engine shows room; shrinks it on a full KV cache and gives extra slots
// back when decode steps are too slow for other work there; stays within
// its bounds and ignores noise. Background work alone has no per-token
// target: the gaps do not bound it. Slots above the start are background
// work's only (extra()).
#include "core/adaptive_capacity.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <vector>

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
  c.max_extra_share = 4;  // the ceiling is max_limit (256) in these tests, but in ExtraSlotsAtMostAShareOfTheStart
  return c;
}

// One interval's inputs; the defaults are a backend that wants to grow.
struct Interval {
  double waiting = 0;
  double kv = 0.3;
  uint64_t gaps = 100;
  uint64_t within = 90;  // of `gaps`, within the gap target
  bool background_waiting = true;
  int in_flight = -1;  // -1: at the limit
  bool others_waiting = false;
  bool others_running = false;
};

class Driver {
 public:
  explicit Driver(AdaptiveCapacityConfig c = config(), uint32_t start = 64) : c_(c, start, now_) {}

  // Feeds one interval's figures and lets it decide; returns the new limit.
  uint32_t step(const Interval& i) {
    c_.engine(i.waiting, i.kv);
    c_.gaps(i.gaps, i.within);
    c_.occupancy({.in_flight = i.in_flight < 0 ? c_.limit() : static_cast<uint32_t>(i.in_flight),
                  .background_waiting = i.background_waiting,
                  .others_waiting = i.others_waiting,
                  .others_running = i.others_running});
    now_ += 200ms;
    c_.update(now_);
    return c_.limit();
  }
  uint32_t limit() const { return c_.limit(); }
  const CapacityController& controller() const { return c_; }

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
  c.occupancy({.in_flight = 64, .background_waiting = true});
  EXPECT_FALSE(c.update(Clock::time_point{} + 100ms));
  EXPECT_EQ(c.limit(), 64u);
  EXPECT_TRUE(c.update(Clock::time_point{} + 200ms));
  EXPECT_EQ(c.limit(), 72u);
}

TEST(AdaptiveCapacity, DoesNotGrowWithoutEachCondition) {
  EXPECT_EQ(Driver().step({.background_waiting = false}), 64u);  // no background work waits for a slot
  EXPECT_EQ(Driver().step({.others_waiting = true}), 64u);  // other work waits: extra slots are not for it
  EXPECT_EQ(Driver().step({.in_flight = 40}), 64u);        // free slots: the limit is not the bottleneck
  EXPECT_EQ(Driver().step({.waiting = 2}), 64u);           // the engine queues itself
  EXPECT_EQ(Driver().step({.kv = 0.85}), 64u);             // between the KV thresholds: hold
  // With other work there, the gaps must show decode steps fast enough for it:
  EXPECT_EQ(Driver().step({.gaps = 10, .within = 10, .others_running = true}), 64u);  // too few to judge
  EXPECT_EQ(Driver().step({.within = 40, .others_running = true}), 64u);              // too slow
}

// Background work alone has no per-token target: slow gaps, or none, do not
// hold it back; the KV cache and the engine's own queue do, and the ceiling.
TEST(AdaptiveCapacity, BackgroundWorkAloneGrowsWhateverTheGaps) {
  EXPECT_EQ(Driver().step({.gaps = 0, .within = 0}), 72u);
  EXPECT_EQ(Driver().step({.within = 0}), 72u);
  Driver d;
  for (int i = 0; i < 100; ++i) d.step({.within = 0});
  EXPECT_EQ(d.limit(), 256u);                      // the ceiling
  EXPECT_EQ(d.step({.within = 0}), 256u);          // slow gaps alone do not shrink it
  EXPECT_EQ(d.step({.waiting = 3, .within = 0}), 256u);  // the engine queues: hold
  EXPECT_EQ(d.step({.kv = 0.95, .within = 0}), 230u);    // a full KV cache: x 0.9
}

TEST(AdaptiveCapacity, ShrinksOnAFullKvCache) {
  Driver d;
  EXPECT_EQ(d.step({.kv = 0.95}), 57u);  // x 0.9
  // Even with nothing waiting and few slots in use: KV near full is always overload.
  EXPECT_EQ(d.step({.kv = 0.95, .gaps = 0, .within = 0, .background_waiting = false, .in_flight = 5}), 51u);
}

// Decode steps too slow for the other work there take back what growth
// added, down to the start (below it slow gaps are mostly prefill steps,
// which fewer slots do not speed up).
TEST(AdaptiveCapacity, ShrinksToItsStartWhenDecodeStepsAreSlowerThanTheTarget) {
  Driver d;
  d.step({});
  EXPECT_EQ(d.step({}), 81u);
  EXPECT_EQ(d.step({.gaps = 100, .within = 40, .others_running = true}), 72u);  // the median gap over the target
  EXPECT_EQ(d.step({.gaps = 100, .within = 40, .others_running = true}), 64u);
  EXPECT_EQ(d.step({.gaps = 100, .within = 0, .others_running = true}), 64u);
}

// Below the start (after a full KV cache) slow gaps neither shrink it
// further nor lift it back to the start.
TEST(AdaptiveCapacity, SlowGapsLeaveALimitBelowItsStartAlone) {
  Driver d;
  EXPECT_EQ(d.step({.kv = 0.95}), 57u);
  EXPECT_EQ(d.step({.gaps = 100, .within = 10, .others_running = true}), 57u);
}

TEST(AdaptiveCapacity, SlowGapsDoNotShrinkALimitNobodyReaches) {
  Driver d;
  d.step({});
  EXPECT_EQ(d.step({}), 81u);
  EXPECT_EQ(d.step({.gaps = 100, .within = 0, .in_flight = 20, .others_running = true}), 81u);
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
                .background_waiting = unit(rng) < 0.7,
                .in_flight = static_cast<int>(unit(rng) * 300),
                .others_waiting = unit(rng) < 0.3,
                .others_running = unit(rng) < 0.5};
    in.within = static_cast<uint64_t>(unit(rng) * static_cast<double>(in.gaps));
    const uint32_t after = d.step(in);
    ASSERT_GE(after, c.min_limit);
    ASSERT_LE(after, c.max_limit);
    if (after > before) {
      ASSERT_LE(after, before + std::max(1u, static_cast<uint32_t>(before * c.growth)));
      ASSERT_EQ(in.waiting, 0);
      ASSERT_LT(in.kv, c.kv_grow_below);
      ASSERT_TRUE(in.background_waiting);
      ASSERT_FALSE(in.others_waiting);
      ASSERT_GE(static_cast<uint32_t>(in.in_flight), before);
      if (in.others_running) {  // the gaps judged only for other work there
        ASSERT_GE(in.gaps, c.min_gaps);
        ASSERT_GE(static_cast<double>(in.within), c.itl_quantile * static_cast<double>(in.gaps));
      }
    } else if (after < before) {
      const auto backoff = static_cast<uint32_t>(before * c.backoff);
      if (in.kv <= c.kv_shrink_above) {
        // Slow gaps with other work there to be slowed: half the extra
        // slots at once (or the backoff, if that is more), never below the start.
        ASSERT_TRUE(in.others_waiting || in.others_running);
        ASSERT_LT(static_cast<double>(in.within), c.itl_quantile * static_cast<double>(in.gaps));
        ASSERT_EQ(after, std::max(64u, std::min(64 + (before - 64) / 2, backoff)));
      } else {
        ASSERT_GE(after, backoff - 1);
      }
    }
    // Slots above the start are background work's only.
    ASSERT_EQ(d.controller().base(), std::min(after, 64u));
    ASSERT_EQ(d.controller().base() + d.controller().extra(), after);
  }
}

// Slow gaps while other (interactive) work runs or waits give back half the
// extra slots at once, not a tenth: that work pays for every extra sequence.
TEST(AdaptiveCapacity, SlowGapsWithOtherWorkThereHalveTheExtraSlots) {
  Driver d;
  for (int i = 0; i < 100; ++i) d.step({});
  ASSERT_EQ(d.limit(), 256u);
  EXPECT_EQ(d.step({.within = 40, .others_running = true}), 160u);  // 64 + 192 / 2
  EXPECT_EQ(d.step({.within = 40, .others_waiting = true}), 112u);
  EXPECT_EQ(d.step({.within = 40}), 126u);  // background alone: no per-token target, it grows again
}

TEST(AdaptiveCapacity, ExtraSlotsAreWhatGrowthAddedAboveTheStart) {
  Driver d;
  d.step({});
  EXPECT_EQ(d.controller().base(), 64u);
  EXPECT_EQ(d.controller().extra(), 8u);
  d.step({.kv = 0.95});  // 72 x 0.9 = 64
  d.step({.kv = 0.95});
  EXPECT_EQ(d.controller().base(), 57u);
  EXPECT_EQ(d.controller().extra(), 0u);
}

TEST(AdaptiveCapacity, ExtraSlotsAtMostAShareOfTheStart) {
  AdaptiveCapacityConfig c = config();
  c.max_extra_share = 0.25;
  Driver d(c, 64);
  for (int i = 0; i < 100; ++i) d.step({});
  EXPECT_EQ(d.limit(), 80u);
  EXPECT_EQ(d.controller().extra(), 16u);
  c.max_extra_share = 0;
  Driver none(c, 64);
  EXPECT_EQ(none.step({}), 64u);
  EXPECT_EQ(AdaptiveCapacityConfig{}.max_extra_share, 0.25);  // the default
}

TEST(AdaptiveCapacity, GapTargetIsTheTightestDeclaredBound) {
  using Seconds = std::chrono::duration<double>;
  const AdaptiveCapacityConfig c = config();
  const std::vector<Seconds> bounds{Seconds(0.2), Seconds(0), Seconds(0.04375)};
  EXPECT_DOUBLE_EQ(gap_target(c, bounds).count(), 0.04375);
  const std::vector<Seconds> none{Seconds(0), Seconds(0)};
  EXPECT_DOUBLE_EQ(gap_target(c, none).count(), 0.030);  // itl_target
  EXPECT_DOUBLE_EQ(gap_target(c, {}).count(), 0.030);
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
  c = config();
  c.max_extra_share = -0.5;
  EXPECT_NE(validate(c), nullptr);
}

}  // namespace
}  // namespace arbiter::sched
