// Adaptive capacity per backend: the engine's budget (every class's slots)
// grows only while other work waits for a full part of it, the engine
// queues nothing, its KV cache has room, and the streams' time goes to fast
// decode steps with every first token within its headroom, for a few
// intervals in a row; it settles toward what the engine runs while the
// engine queues; replicas share it. The extra slots grow only while the
// limit holds background work back, no other work waits, and the engine
// shows room; a full KV cache shrinks, slow decode steps give back what
// growth added, and so does a client leaving a running request; everything
// stays within its bounds and ignores noise.
// Background work alone has no per-token target: the gaps do not bound it.
// Slots above the base are background work's only (extra()).
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
  double fast_time = -1;  // share of the gaps' time in those within; -1: as their count
  uint64_t firsts_slow = 0;
  uint64_t abandoned = 0;  // runs their clients left
  bool background_waiting = true;
  int in_flight = -1;  // -1: at the limit
  bool others_waiting = false;
  bool others_running = false;
  int others_in_flight = 0;  // -1: all of in_flight
  double running = -1;       // the engine's; -1: what this gateway sent, less `waiting`
};

class Driver {
 public:
  explicit Driver(AdaptiveCapacityConfig c = config(), uint32_t start = 64) : c_(c, start, now_) {}

  // Feeds one interval's figures and lets it decide; returns the new limit.
  uint32_t step(const Interval& i) {
    const uint32_t in_flight = i.in_flight < 0 ? c_.limit() : static_cast<uint32_t>(i.in_flight);
    c_.engine(i.waiting, i.kv, i.running < 0 ? std::max(0.0, in_flight - i.waiting) : i.running);
    const double share = i.fast_time < 0 ? (i.gaps == 0 ? 0 : static_cast<double>(i.within) / i.gaps) : i.fast_time;
    c_.gaps({.total = i.gaps,
             .within = i.within,
             .seconds = static_cast<double>(i.gaps),
             .within_seconds = share * static_cast<double>(i.gaps),
             .firsts = i.firsts_slow + 1,
             .firsts_slow = i.firsts_slow,
             .abandoned = i.abandoned});
    c_.occupancy({.in_flight = in_flight,
                  .background_waiting = i.background_waiting,
                  .others_waiting = i.others_waiting,
                  .others_running = i.others_running,
                  .others_in_flight = i.others_in_flight < 0 ? in_flight : static_cast<uint32_t>(i.others_in_flight)});
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
  c.gaps({.total = 100, .within = 100, .seconds = 1, .within_seconds = 1});
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

// A backend whose part of the engine is full of other (non-background)
// work with more of it waiting, on an engine with room whose streams' time
// goes to fast decode steps.
Interval wants_budget() {
  return {.background_waiting = false, .others_waiting = true, .others_running = true, .others_in_flight = -1};
}

// Issue 41: the slots follow the engine for every class, not only
// background work's, after budget_patience intervals in a row that allow it.
TEST(AdaptiveCapacity, BudgetGrowsForEveryClassAfterItsPatience) {
  Driver d;
  for (uint32_t i = 1; i < config().budget_patience; ++i) EXPECT_EQ(d.step(wants_budget()), 64u) << i;
  EXPECT_EQ(d.step(wants_budget()), 72u);
  EXPECT_EQ(d.controller().base(), 72u);  // every class's
  EXPECT_EQ(d.controller().budget(), 72u);
  EXPECT_EQ(d.controller().extra(), 0u);
  for (int i = 0; i < 200; ++i) d.step(wants_budget());
  EXPECT_EQ(d.controller().base(), 256u);  // the ceiling: max (vLLM's max_num_seqs)
  // One interval that does not allow it starts the patience over.
  Driver again;
  for (uint32_t i = 1; i < config().budget_patience; ++i) again.step(wants_budget());
  Interval waits = wants_budget();
  waits.others_waiting = false;
  again.step(waits);
  EXPECT_EQ(again.step(wants_budget()), 64u);
}

// Each condition of the budget's growth, alone missing, holds it.
TEST(AdaptiveCapacity, BudgetDoesNotGrowWithoutEachCondition) {
  const auto after_patience = [](Interval in) {
    Driver d;
    for (uint32_t i = 0; i < 2 * config().budget_patience; ++i) d.step(in);
    return d.controller().budget();
  };
  // The control: it grows from the patience's last interval on (64, 72, 81, 91, 102, 114, 128).
  EXPECT_EQ(after_patience(wants_budget()), 128u);
  Interval in = wants_budget();
  in.others_waiting = false;  // nothing waits for a slot
  EXPECT_EQ(after_patience(in), 64u);
  in = wants_budget();
  in.others_in_flight = 20;  // background work holds the part: the scheduler's to take back
  EXPECT_EQ(after_patience(in), 64u);
  in = wants_budget();
  in.in_flight = 40;  // free slots
  EXPECT_EQ(after_patience(in), 64u);
  in = wants_budget();
  in.waiting = 1;  // the engine queues
  EXPECT_EQ(after_patience(in), 64u);
  in = wants_budget();
  in.kv = 0.85;
  EXPECT_EQ(after_patience(in), 64u);
  in = wants_budget();
  in.within = 40;  // most decode steps too slow for the tightest TPOT
  EXPECT_EQ(after_patience(in), 64u);
  in = wants_budget();
  in.fast_time = 0.3;  // most steps fast, but most of the time in slow (prefill) steps
  EXPECT_EQ(after_patience(in), 64u);
  in = wants_budget();
  in.firsts_slow = 1;  // a first token past its class's headroom
  EXPECT_EQ(after_patience(in), 64u);
  in = wants_budget();
  in.abandoned = 1;  // a client left a running request
  EXPECT_EQ(after_patience(in), 64u);
}

// A grown budget, then intervals that each show `late`: half of the growth
// goes back at the first, all of it (never below the start) after a few.
void expect_growth_given_back(const Interval& late) {
  Driver d;
  for (int i = 0; i < 20; ++i) d.step(wants_budget());
  const uint32_t grown = d.controller().budget();
  ASSERT_GT(grown, 100u);
  EXPECT_EQ(d.step(late), 64 + (grown - 64) / 2);
  for (int i = 0; i < 10; ++i) d.step(late);
  EXPECT_EQ(d.limit(), 64u);  // never below the start
}

// What growth added for every class goes back when the classes there pay
// for it: decode steps too slow, or first tokens past their headroom.
TEST(AdaptiveCapacity, SlowFirstTokensGiveTheBudgetBack) {
  Interval slow = wants_budget();
  slow.firsts_slow = 2;
  expect_growth_given_back(slow);
}

// A client leaving what runs there gives the growth back as a slow first
// token does: its class's per-token SLO allowed an answer longer than the
// client waits (issue 41: chat failing 32% of its requests mid-answer in
// overload with the budget grown 64 -> 120, 3% without).
TEST(AdaptiveCapacity, ClientsLeavingRunningRequestsGiveTheBudgetBack) {
  Interval left = wants_budget();
  left.abandoned = 1;
  expect_growth_given_back(left);
}

// The engine queues requests itself: the budget settles toward what it
// runs, a backoff step at a time, never below the start.
TEST(AdaptiveCapacity, AnEngineThatQueuesSettlesTheBudgetToWhatItRuns) {
  Driver d;
  for (int i = 0; i < 20; ++i) d.step(wants_budget());
  ASSERT_GE(d.controller().budget(), 150u);
  Interval queues = wants_budget();
  queues.waiting = 20;
  queues.running = 120;
  for (int i = 0; i < 20; ++i) d.step(queues);
  EXPECT_EQ(d.controller().budget(), 120u);
  queues.running = 30;
  for (int i = 0; i < 20; ++i) d.step(queues);
  EXPECT_EQ(d.controller().budget(), 64u);
}

// Three gateway replicas in front of one engine, each with its own
// controller and its own clients (more demand than slots), seeing the same
// engine figures: their parts converge to equal shares and add up to the
// budget, where each alone would have taken its whole start.
TEST(AdaptiveCapacity, ReplicasShareTheEnginesBudget) {
  AdaptiveCapacityConfig c = config();
  c.max_extra_share = 0;
  Clock::time_point now{};
  std::vector<CapacityController> replicas(3, CapacityController(c, 64, now));
  std::vector<uint32_t> in_flight{64, 10, 0};
  for (int i = 0; i < 300; ++i) {
    now += 200ms;
    const uint32_t engine_runs = in_flight[0] + in_flight[1] + in_flight[2];
    for (std::size_t r = 0; r < replicas.size(); ++r) {
      CapacityController& x = replicas[r];
      x.engine(0, 0.3, engine_runs);
      // Slow decode steps for the others there: the budget holds at the start.
      x.gaps({.total = 100, .within = 10, .seconds = 1, .within_seconds = 0.1});
      x.occupancy({.in_flight = in_flight[r], .others_waiting = true, .others_running = true,
                   .others_in_flight = in_flight[r]});
      x.update(now);
    }
    // Each fills what it is given (requests end and start between scrapes).
    for (std::size_t r = 0; r < replicas.size(); ++r) in_flight[r] = replicas[r].base();
  }
  // The sum saws between a backoff under the budget and a step (2 slots)
  // per replica over it; the parts even out from 64 / 10 / 0.
  uint32_t sum = 0;
  for (const CapacityController& x : replicas) {
    EXPECT_EQ(x.budget(), 64u);
    EXPECT_NEAR(x.base(), 64 / 3.0, 4);
    sum += x.base();
  }
  EXPECT_LE(sum, 64u + 3 * 2);
  EXPECT_GE(sum, 64u * 9 / 10 - 3);
}

// Property: whatever the engine, the gaps and the queue show, the budget,
// the part and the limit stay ordered within [min, max]; while the engine
// queues, none of them grows; the budget grows above the start only after
// budget_patience intervals in a row that each allowed it.
TEST(AdaptiveCapacity, PropertyBudgetWithinBoundsAndNeverGrowingWhileTheEngineQueues) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<double> unit(0, 1);
  AdaptiveCapacityConfig c = config();
  c.max_extra_share = 0.5;
  Driver d(c, 64);
  uint32_t streak = 0;
  for (int i = 0; i < 50'000; ++i) {
    const CapacityController& x = d.controller();
    const uint32_t budget = x.budget(), base = x.base(), limit = x.limit();
    Interval in{.waiting = unit(rng) < 0.3 ? std::floor(unit(rng) * 10) : 0.0,
                .kv = unit(rng) < 0.5 ? unit(rng) * 0.8 : unit(rng),
                .gaps = static_cast<uint64_t>(unit(rng) * 200),
                .fast_time = unit(rng),
                .firsts_slow = unit(rng) < 0.1 ? 1u : 0u,
                .abandoned = unit(rng) < 0.1 ? 1u : 0u,
                .background_waiting = unit(rng) < 0.5,
                .in_flight = static_cast<int>(unit(rng) * 300),
                .others_waiting = unit(rng) < 0.6,
                .others_running = unit(rng) < 0.7,
                .running = unit(rng) < 0.3 ? unit(rng) * 600 : -1};
    in.within = static_cast<uint64_t>(unit(rng) * static_cast<double>(in.gaps));
    in.others_in_flight = static_cast<int>(unit(rng) * in.in_flight);
    const double load = std::max(in.running < 0 ? in.in_flight : in.running + in.waiting, 1.0 * in.in_flight);
    const bool allowed = in.waiting == 0 && in.kv < c.kv_grow_below && in.kv <= c.kv_shrink_above &&
                         in.others_waiting && static_cast<uint32_t>(in.in_flight) >= base &&
                         in.others_in_flight >= std::floor(base * c.backoff) && load >= budget &&
                         in.gaps >= c.min_gaps &&
                         static_cast<double>(in.within) >= c.itl_quantile * static_cast<double>(in.gaps) &&
                         in.fast_time >= c.itl_quantile && in.firsts_slow == 0 && in.abandoned == 0;
    streak = allowed ? streak + 1 : 0;
    d.step(in);
    ASSERT_LE(c.min_limit, x.base());
    ASSERT_LE(x.base(), x.budget());
    ASSERT_LE(x.budget(), c.max_limit);
    ASSERT_LE(x.base(), x.limit());
    ASSERT_LE(x.limit(), c.max_limit);
    if (in.waiting > 0) {
      ASSERT_LE(x.budget(), budget) << i;
      ASSERT_LE(x.base(), base) << i;
      ASSERT_LE(x.limit(), limit) << i;
    }
    if (x.budget() > budget && budget >= 64) {
      ASSERT_GE(streak, c.budget_patience) << i;
      ASSERT_LE(x.budget(), budget + std::max(1u, static_cast<uint32_t>(budget * c.growth)));
    }
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
  // The default: no extra slots (issue 41: they cost day's critical P99
  // TTFT 242 -> 251 ms; docs/configuration.md).
  EXPECT_EQ(AdaptiveCapacityConfig{}.max_extra_share, 0);
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
