// The canary's verdicts: rolled back when worse beyond the margin in error
// rate, P99 TTFT or P99 ITL with enough requests on each side; never on
// too few; promoted through its steps while healthy; figures in the verdict.
#include <gtest/gtest.h>

#include <random>

#include "core/rollout/canary_judge.hpp"

namespace arbiter::rollout {
namespace {

using namespace std::chrono_literals;

TimePoint at(std::chrono::milliseconds ms) { return TimePoint(ms); }

AliasConfig alias(std::vector<double> steps = {}) {
  CanaryConfig canary;
  canary.target = "new";
  canary.min_requests = 50;
  canary.window = 60s;
  canary.steps = std::move(steps);
  canary.step_after = 30s;
  return AliasConfig{.name = "chat",
                     .targets = {{.model = "old", .weight = 90}, {.model = "new", .weight = 10}},
                     .sticky = Sticky::kSession,
                     .canary = canary};
}

// `n` outcomes a side, TTFT and ITL drawn around the given means.
void feed(CanaryJudge& judge, TimePoint now, int n, double canary_ttft, double canary_itl, double canary_errors,
          std::mt19937& rng) {
  std::normal_distribution<double> jitter(1.0, 0.05);
  std::bernoulli_distribution canary_fails(canary_errors);
  for (int i = 0; i < n; ++i) {
    judge.record(0, now, {.error = false, .ttft_ms = 200 * jitter(rng), .itl_ms = 20 * jitter(rng)});
    judge.record(1, now, {.error = canary_fails(rng), .ttft_ms = canary_ttft * jitter(rng), .itl_ms = canary_itl * jitter(rng)});
  }
}

TEST(CanaryJudge, AnEqualCanaryStaysAndAWorseOneIsRolledBackForItsReason) {
  struct Case {
    double ttft, itl, errors;
    const char* reason;  // nullptr: no rollback
  };
  const Case cases[] = {{200, 20, 0, nullptr},  {215, 21, 0, nullptr},  {260, 20, 0, "ttft_p99"},
                        {200, 26, 0, "itl_p99"}, {200, 20, 0.05, "error_rate"}, {200, 20, 0.004, nullptr}};
  for (const Case& c : cases) {
    std::mt19937 rng(3);
    CanaryJudge judge(alias(), at(0ms));
    EXPECT_EQ(judge.weights(), (std::vector<double>{90, 10}));
    feed(judge, at(1000ms), 400, c.ttft, c.itl, c.errors, rng);
    const auto verdict = judge.evaluate(at(2000ms));
    if (c.reason == nullptr) {
      EXPECT_FALSE(verdict) << c.ttft << " " << c.itl << " " << c.errors << ": " << (verdict ? verdict->reason : "");
      EXPECT_EQ(judge.state(), CanaryJudge::State::kTrial);
      continue;
    }
    ASSERT_TRUE(verdict) << c.reason;
    EXPECT_EQ(verdict->kind, Verdict::Kind::kRolledBack);
    EXPECT_EQ(verdict->reason, c.reason);
    EXPECT_EQ(verdict->canary.requests, 400u);
    EXPECT_EQ(verdict->stable.requests, 400u);
    EXPECT_EQ(judge.weights(), (std::vector<double>{100, 0}));
    EXPECT_EQ(judge.state(), CanaryJudge::State::kRolledBack);
    EXPECT_FALSE(judge.evaluate(at(3000ms)));  // it stays rolled back
  }
}

TEST(CanaryJudge, TooFewRequestsGiveNoVerdictAndOldOnesLeaveTheWindow) {
  std::mt19937 rng(5);
  CanaryJudge judge(alias(), at(0ms));
  feed(judge, at(0ms), 49, 1000, 100, 0.5, rng);  // awful, but 49 < min_requests
  EXPECT_FALSE(judge.evaluate(at(1000ms)));
  feed(judge, at(30s), 40, 200, 20, 0, rng);
  // 61 s later the first 49 have left the window: 40 < 50 again.
  EXPECT_FALSE(judge.evaluate(at(61s)));
  EXPECT_EQ(judge.figures(at(61s)).first.requests, 40u);
}

TEST(CanaryJudge, AHealthyCanaryIsPromotedStepByStepToAll) {
  std::mt19937 rng(7);
  CanaryJudge judge(alias({1, 5, 25, 100}), at(0ms));
  EXPECT_NEAR(judge.canary_percent(), 1, 1e-9);
  EXPECT_NEAR(judge.weights()[0], 99, 1e-9);
  std::vector<double> seen;
  for (int s = 1; s <= 6; ++s) {
    const TimePoint now = at(std::chrono::seconds(30 * s));
    feed(judge, now, 100, 200, 20, 0, rng);
    if (auto v = judge.evaluate(now)) {
      EXPECT_EQ(v->kind, Verdict::Kind::kPromoted);
      seen.push_back(v->canary_percent);
    }
  }
  EXPECT_EQ(seen, (std::vector<double>{5, 25, 100}));
  EXPECT_EQ(judge.state(), CanaryJudge::State::kPromoted);
  EXPECT_EQ(judge.weights(), (std::vector<double>{0, 100}));
}

TEST(CanaryJudge, AStepNotYetDueWaitsAndARegressionMidRolloutRollsBack) {
  std::mt19937 rng(9);
  CanaryJudge judge(alias({5, 50}), at(0ms));
  feed(judge, at(10s), 100, 200, 20, 0, rng);
  EXPECT_FALSE(judge.evaluate(at(10s)));  // step_after is 30 s
  feed(judge, at(31s), 100, 200, 20, 0, rng);
  ASSERT_TRUE(judge.evaluate(at(31s)));
  EXPECT_NEAR(judge.canary_percent(), 50, 1e-9);
  feed(judge, at(40s), 400, 200, 20, 0.2, rng);
  const auto v = judge.evaluate(at(40s));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "error_rate");
  EXPECT_EQ(judge.weights(), (std::vector<double>{100, 0}));  // the stable side takes it all
}

}  // namespace
}  // namespace arbiter::rollout
