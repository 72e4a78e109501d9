// The stage controller's hysteresis and hold, graded shedding and each
// stage's actions (core/overload/degradation.hpp).
#include "core/overload/degradation.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

namespace arbiter::overload {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

sched::TimePoint at_ms(int64_t ms) { return sched::TimePoint(milliseconds(ms)); }

TEST(StageController, ClimbsAtOnceToTheStageTheLoadReaches) {
  StageController c;
  EXPECT_EQ(c.step(0.69, at_ms(0)), Stage::kNormal);
  EXPECT_EQ(c.step(0.70, at_ms(1)), Stage::kElevated);
  EXPECT_EQ(c.step(0.96, at_ms(2)), Stage::kShedding);  // skips high
  EXPECT_EQ(c.transitions(), 2u);
  EXPECT_EQ(c.since(), at_ms(2));
}

TEST(StageController, StepsDownOneStageAfterTheHoldAndBelowTheMargin) {
  StageController c(StageRules{.hold = seconds(10)});
  c.step(0.97, at_ms(0));
  // Far below, but not held long enough.
  EXPECT_EQ(c.step(0.1, at_ms(9'999)), Stage::kShedding);
  EXPECT_EQ(c.step(0.1, at_ms(10'000)), Stage::kHigh);  // one stage at a time
  EXPECT_EQ(c.step(0.1, at_ms(15'000)), Stage::kHigh);  // a new hold
  EXPECT_EQ(c.step(0.1, at_ms(20'000)), Stage::kElevated);
  // Within the margin below elevated's entry (0.70 - 0.05): it stays.
  EXPECT_EQ(c.step(0.66, at_ms(40'000)), Stage::kElevated);
  EXPECT_EQ(c.step(0.64, at_ms(40'001)), Stage::kNormal);
}

TEST(StageController, ALoadOscillatingAroundAThresholdDoesNotFlap) {
  // Property: whatever the load does, two transitions down are at least
  // `hold` apart, and the stage is never below what the load demands.
  const StageRules rules{.hold = seconds(5)};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(-0.08, 0.08);
  for (const double centre : {0.70, 0.85, 0.95, 0.5}) {
    StageController c(rules);
    sched::TimePoint last_down{};
    bool any_down = false;
    for (int64_t t = 0; t < 600'000; t += 100) {
      const double load = centre + noise(rng);
      const Stage before = c.stage();
      const Stage after = c.step(load, at_ms(t));
      if (after < before) {
        if (any_down) {
          ASSERT_GE(at_ms(t) - last_down, rules.hold);
        }
        last_down = at_ms(t);
        any_down = true;
      }
      for (const Stage s : {Stage::kElevated, Stage::kHigh, Stage::kShedding}) {
        if (load >= rules.entry(s)) {
          ASSERT_GE(after, s);
        }
      }
    }
    // 6000 readings around a threshold: the hold bounds the transitions.
    EXPECT_LE(c.transitions(), 2 * 600 / 5 + 1) << "centre " << centre;
  }
}

TEST(StageController, RulesAreChecked) {
  EXPECT_FALSE(invalid(StageRules{}));
  EXPECT_TRUE(invalid(StageRules{.elevated_at = 0.8, .high_at = 0.7}));
  EXPECT_TRUE(invalid(StageRules{.shed_at = 1.2}));
  EXPECT_TRUE(invalid(StageRules{.exit_margin = 0.7}));
  EXPECT_TRUE(invalid(StageRules{.exit_margin = -0.1}));
}

TEST(Shedding, RisesWithLoadAndFallsWithWeight) {
  EXPECT_DOUBLE_EQ(shed_probability(0.94, 1, 0.95, 0.9), 0);
  EXPECT_DOUBLE_EQ(shed_probability(0.95, 1, 0.95, 0.9), 0);
  EXPECT_DOUBLE_EQ(shed_probability(1.0, 1, 0.95, 0.9), 0.9);
  // Property over a grid: monotone in L, anti-monotone in the weight.
  for (double l = 0.95; l <= 1.0; l += 0.001) {
    for (double w = 0.25; w <= 8; w *= 2) {
      const double p = shed_probability(l, w, 0.95, 0.9);
      ASSERT_GE(p, 0);
      ASSERT_LE(p, 0.9);
      ASSERT_LE(p, shed_probability(l + 0.001, w, 0.95, 0.9));
      ASSERT_GE(p, shed_probability(l, w * 2, 0.95, 0.9));
    }
  }
  // Half way into the band: batch (0.5) shed more often than chat (1), chat than completion (2).
  const double batch = shed_probability(0.975, 0.5, 0.95, 0.9);
  const double chat = shed_probability(0.975, 1, 0.95, 0.9);
  const double completion = shed_probability(0.975, 2, 0.95, 0.9);
  EXPECT_GT(batch, chat);
  EXPECT_GT(chat, completion);
  // A threshold of 1: only a full pool sheds.
  EXPECT_DOUBLE_EQ(shed_probability(0.999, 1, 1.0, 0.9), 0);
  EXPECT_DOUBLE_EQ(shed_probability(1.0, 1, 1.0, 0.9), 0.9);
}

TEST(Decide, EachStageAddsItsActionsAndAProtectedClassGetsNone) {
  const ClassActions chat = default_actions(false, false, 512);
  EXPECT_FALSE(decide(Stage::kNormal, chat, 0.5, 1, 0.95, 0.9, 0).cap);
  const Decision elevated = decide(Stage::kElevated, chat, 0.75, 1, 0.95, 0.9, 0);
  EXPECT_EQ(elevated.cap, 512);
  EXPECT_FALSE(elevated.variant);
  const Decision high = decide(Stage::kHigh, chat, 0.9, 1, 0.95, 0.9, 0);
  EXPECT_EQ(high.cap, 512);
  EXPECT_TRUE(high.variant);
  EXPECT_FALSE(high.shed);
  EXPECT_TRUE(decide(Stage::kShedding, chat, 1.0, 1, 0.95, 0.9, 0.0).shed);
  EXPECT_FALSE(decide(Stage::kShedding, chat, 1.0, 1, 0.95, 0.9, 0.95).shed);  // drew above 0.9

  // The critical class: protected whatever the load and the draw.
  const ClassActions critical = default_actions(true, false, 512);
  const Decision none = decide(Stage::kShedding, critical, 1.0, 4, 0.95, 0.9, 0.0);
  EXPECT_FALSE(none.cap);
  EXPECT_FALSE(none.variant);
  EXPECT_FALSE(none.shed);

  // Background: paused (the scheduler's part) and shed, never capped or rerouted.
  const ClassActions batch = default_actions(false, true, 512);
  EXPECT_TRUE(batch.pause);
  const Decision b = decide(Stage::kShedding, batch, 1.0, 0.5, 0.95, 0.9, 0.0);
  EXPECT_FALSE(b.cap);
  EXPECT_FALSE(b.variant);
  EXPECT_TRUE(b.shed);
}

TEST(Decide, PausingClassesArePausedFromElevatedUnlessProtected) {
  const ClassActions batch = default_actions(false, true, 512);
  EXPECT_FALSE(paused_at(Stage::kNormal, batch));
  for (const Stage s : {Stage::kElevated, Stage::kHigh, Stage::kShedding}) EXPECT_TRUE(paused_at(s, batch));
  EXPECT_FALSE(paused_at(Stage::kShedding, default_actions(false, false, 512)));  // chat is capped, not paused
  EXPECT_FALSE(paused_at(Stage::kShedding, ClassActions{.protect = true, .pause = true}));
}

TEST(Decide, TheShareShedMatchesTheProbability) {
  // Draws spread over [0, 1): the share refused is the probability.
  const ClassActions chat = default_actions(false, false, 0);
  const double p = shed_probability(0.98, 1, 0.95, 0.9);
  int shed = 0;
  constexpr int kDraws = 100'000;
  for (int i = 0; i < kDraws; ++i) {
    shed += decide(Stage::kShedding, chat, 0.98, 1, 0.95, 0.9, (i + 0.5) / kDraws).shed;
  }
  EXPECT_NEAR(static_cast<double>(shed) / kDraws, p, 1e-4);
}

}  // namespace
}  // namespace arbiter::overload
