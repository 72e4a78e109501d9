// The model breaker: each threshold at its boundary and the minimum volume,
// the walk closed -> degraded -> fallback -> isolated as the variants fail
// too, the 5, 10, 20 ... 300 s openings and their reset, half-open trials,
// stages the model does not declare, stale outcomes, the sliding window, time
// going backwards, and invariants over random failures.
#include "core/resilience/model_breaker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <ostream>
#include <random>

#include "config_error.hpp"

namespace arbiter::resilience {

// Stages and targets print by name in failures.
static void PrintTo(BreakerStage stage, std::ostream* os) { *os << stage_name(stage); }
static void PrintTo(BreakerTarget target, std::ostream* os) {
  constexpr const char* kNames[] = {"primary", "degraded", "fallback", "refuse"};
  *os << kNames[static_cast<int>(target)];
}

}  // namespace arbiter::resilience

namespace arbiter::resilience::model_breaker_test {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Stage = BreakerStage;
using Target = BreakerTarget;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);  // a slice boundary

// A model that declares both its variants.
ModelBreakerConfig with_variants() {
  ModelBreakerConfig c;
  c.has_degraded = true;
  c.has_fallback = true;
  return c;
}

// `ok` successes then `failed` failures, each routed and ended at `at`.
void feed(ModelBreaker& b, int ok, int failed, TimePoint at) {
  for (int i = 0; i < ok + failed; ++i) {
    const BreakerRoute r = b.route(at);
    b.record(r, i >= ok, at);
  }
}

// Sends the half-open's trials at `at` and ends them all well.
void pass_trials(ModelBreaker& b, TimePoint at, uint32_t trials = 3) {
  for (uint32_t i = 0; i < trials; ++i) {
    const BreakerRoute r = b.route(at);
    ASSERT_TRUE(r.trial);
    b.record(r, false, at);
  }
}

TEST(ModelBreaker, ConfigIsValidated) {
  EXPECT_EQ(validate(ModelBreakerConfig{}), std::nullopt);
  auto error = [](auto edit) { return config_error<ModelBreakerConfig>(edit); };
  EXPECT_NE(error([](auto& c) { c.window = milliseconds(0); }).find("window"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.min_requests = 0; }).find("min_requests"), std::string::npos);
  for (auto edit : {+[](ModelBreakerConfig& c) { c.degrade_at = 0; },
                    +[](ModelBreakerConfig& c) { c.fallback_at = 0.05; },
                    +[](ModelBreakerConfig& c) { c.isolate_at = 0.1; },
                    +[](ModelBreakerConfig& c) { c.isolate_at = 1.01; }})
    EXPECT_NE(error(edit).find("thresholds must increase"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.base_open = {}; }).find("base_open"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.max_open = seconds(4); }).find("max_open"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.probe_requests = 0; }).find("probe_requests"), std::string::npos);
}

TEST(ModelBreaker, StageNames) {
  EXPECT_EQ(stage_name(Stage::kClosed), "closed");
  EXPECT_EQ(stage_name(Stage::kDegraded), "degraded");
  EXPECT_EQ(stage_name(Stage::kFallback), "fallback");
  EXPECT_EQ(stage_name(Stage::kIsolated), "isolated");
}

TEST(ModelBreaker, NothingTripsBelowTheMinimumVolume) {
  ModelBreaker b(with_variants());
  feed(b, 0, 19, t0);
  EXPECT_EQ(b.stage(t0), Stage::kClosed);
  EXPECT_DOUBLE_EQ(b.error_rate(t0), 1);
  EXPECT_EQ(b.window_requests(t0), 19u);
  feed(b, 0, 1, t0);  // the 20th: straight to isolated
  EXPECT_EQ(b.stage(t0), Stage::kIsolated);
}

TEST(ModelBreaker, EachThresholdTripsExactlyAtItsRate) {
  struct Case {
    int failed;
    Stage stage;
  };
  // Out of 20: 1 is 5%, 2 is 10%, 3 is 15%, 4 is 20%.
  for (const Case& c :
       {Case{0, Stage::kClosed}, Case{1, Stage::kDegraded}, Case{2, Stage::kFallback},
        Case{3, Stage::kFallback}, Case{4, Stage::kIsolated}}) {
    ModelBreaker b(with_variants());
    feed(b, 20 - c.failed, c.failed, t0);
    EXPECT_EQ(b.stage(t0), c.stage) << c.failed;
    const auto xs = b.take_transitions();
    if (c.stage == Stage::kClosed) {
      EXPECT_TRUE(xs.empty());
      continue;
    }
    ASSERT_EQ(xs.size(), 1u);  // a jump, not a walk through the stages between
    EXPECT_EQ(xs[0].from, Stage::kClosed);
    EXPECT_EQ(xs[0].to, c.stage);
    EXPECT_DOUBLE_EQ(xs[0].error_rate, c.failed / 20.0);
    EXPECT_EQ(xs[0].open_for, seconds(5));
    EXPECT_FALSE(xs[0].half_open);
  }
}

TEST(ModelBreaker, EscalatesAsTheVariantsFailTooThenBacksOffToTheCap) {
  ModelBreaker b(with_variants());
  feed(b, 19, 1, t0);
  EXPECT_EQ(b.stage(t0), Stage::kDegraded);
  EXPECT_EQ(b.route(t0 + seconds(1)).target, Target::kDegraded);
  // The degraded variant fails 10% of what it is sent: fallback, open twice
  // as long.
  feed(b, 18, 2, t0 + seconds(1));
  EXPECT_EQ(b.stage(t0 + seconds(1)), Stage::kFallback);
  EXPECT_EQ(b.route(t0 + seconds(1)).target, Target::kFallback);
  // And the fallback model 20%: isolated.
  feed(b, 16, 4, t0 + seconds(2));
  EXPECT_EQ(b.stage(t0 + seconds(2)), Stage::kIsolated);
  BreakerRoute r = b.route(t0 + seconds(3));
  EXPECT_EQ(r.target, Target::kRefuse);
  EXPECT_FALSE(r.trial);
  EXPECT_EQ(r.retry_after, seconds(19));  // opened for 20 s at t0 + 2 s

  auto xs = b.take_transitions();
  ASSERT_EQ(xs.size(), 3u);
  EXPECT_EQ(xs[1].from, Stage::kDegraded);
  EXPECT_EQ(xs[1].to, Stage::kFallback);
  EXPECT_EQ(xs[1].open_for, seconds(10));
  EXPECT_EQ(xs[2].to, Stage::kIsolated);
  EXPECT_EQ(xs[2].open_for, seconds(20));
  EXPECT_EQ(xs[2].at, t0 + seconds(2));

  // Each failed trial opens it again, twice as long: 40, 80, 160, 300, 300.
  TimePoint at = t0 + seconds(22);
  for (Duration expected : {seconds(40), seconds(80), seconds(160), seconds(300), seconds(300)}) {
    EXPECT_EQ(b.route(at - milliseconds(1)).target, Target::kRefuse);
    const BreakerRoute trial = b.route(at);
    EXPECT_TRUE(trial.trial);
    EXPECT_EQ(trial.target, Target::kPrimary);
    b.record(trial, true, at + seconds(1));
    xs = b.take_transitions();
    ASSERT_EQ(xs.size(), 2u);
    EXPECT_TRUE(xs[0].half_open);
    EXPECT_EQ(xs[0].at, at);
    EXPECT_EQ(xs[0].from, Stage::kIsolated);
    EXPECT_EQ(xs[0].to, Stage::kIsolated);
    EXPECT_FALSE(xs[1].half_open);
    EXPECT_EQ(xs[1].to, Stage::kIsolated);
    EXPECT_EQ(xs[1].open_for, expected);
    at += seconds(1) + expected;
  }
  // Trials that pass close it, with a clean window.
  EXPECT_EQ(b.stage(at), Stage::kIsolated);
  pass_trials(b, at);
  EXPECT_EQ(b.stage(at), Stage::kClosed);
  EXPECT_EQ(b.window_requests(at), 0u);
  EXPECT_EQ(b.route(at).target, Target::kPrimary);
  xs = b.take_transitions();
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_EQ(xs[1].from, Stage::kIsolated);
  EXPECT_EQ(xs[1].to, Stage::kClosed);
  EXPECT_EQ(xs[1].open_for, Duration::zero());
}

TEST(ModelBreaker, HalfOpenSendsOnlyTheTrialsToThePrimary) {
  ModelBreaker b(with_variants());
  feed(b, 19, 1, t0);
  const TimePoint at = t0 + seconds(5);
  std::vector<BreakerRoute> trials;
  for (int i = 0; i < 3; ++i) trials.push_back(b.route(at));
  for (const BreakerRoute& r : trials) {
    EXPECT_TRUE(r.trial);
    EXPECT_EQ(r.target, Target::kPrimary);
  }
  // The rest still go where the stage says, and decide nothing: neither
  // their successes nor a failure (under the rates).
  const BreakerRoute rest = b.route(at);
  EXPECT_FALSE(rest.trial);
  EXPECT_EQ(rest.target, Target::kDegraded);
  for (int i = 0; i < 10; ++i) b.record(rest, false, at);
  b.record(rest, true, at);
  EXPECT_EQ(b.stage(at), Stage::kDegraded);
  // All trials must pass.
  b.record(trials[0], false, at + seconds(1));
  b.record(trials[1], false, at + seconds(1));
  EXPECT_EQ(b.stage(at + seconds(1)), Stage::kDegraded);
  b.record(trials[2], false, at + seconds(2));
  EXPECT_EQ(b.stage(at + seconds(2)), Stage::kClosed);
}

TEST(ModelBreaker, ATrialOfAnEarlierHalfOpenDecidesNothing) {
  ModelBreaker b(with_variants());
  feed(b, 19, 1, t0);
  const BreakerRoute first = b.route(t0 + seconds(5));
  const BreakerRoute late = b.route(t0 + seconds(5));
  b.record(first, true, t0 + seconds(6));                  // opened again for 10 s
  EXPECT_EQ(b.stage(t0 + seconds(16)), Stage::kDegraded);  // half-open again
  b.record(late, false, t0 + seconds(16));                 // from the first round
  pass_trials(b, t0 + seconds(16), 2);
  EXPECT_EQ(b.stage(t0 + seconds(16)), Stage::kDegraded);  // one trial still owed
  pass_trials(b, t0 + seconds(16), 1);
  EXPECT_EQ(b.stage(t0 + seconds(16)), Stage::kClosed);
}

TEST(ModelBreaker, AReleasedTrialGoesBackToTheNextRequest) {
  ModelBreaker b(with_variants());
  feed(b, 19, 1, t0);
  const TimePoint at = t0 + seconds(5);
  std::vector<BreakerRoute> trials;
  for (int i = 0; i < 3; ++i) trials.push_back(b.route(at));
  EXPECT_FALSE(b.route(at).trial);  // all three out
  // Two never reach the model (refused by a later stage): two more trials.
  b.release(trials[1], at);
  b.release(trials[2], at);
  const BreakerRoute again1 = b.route(at), again2 = b.route(at);
  EXPECT_TRUE(again1.trial);
  EXPECT_TRUE(again2.trial);
  EXPECT_EQ(again1.target, Target::kPrimary);
  EXPECT_FALSE(b.route(at).trial);
  for (const BreakerRoute& r : {trials[0], again1}) b.record(r, false, at);
  EXPECT_EQ(b.stage(at), Stage::kDegraded);
  b.record(again2, false, at);
  EXPECT_EQ(b.stage(at), Stage::kClosed);
}

TEST(ModelBreaker, ReleasingAnythingButACurrentTrialChangesNothing) {
  ModelBreaker b(with_variants());
  feed(b, 19, 1, t0);
  const BreakerRoute degraded = b.route(t0 + seconds(1));  // not a trial
  const TimePoint at = t0 + seconds(5);
  const BreakerRoute first = b.route(at);
  const BreakerRoute late = b.route(at);
  b.release(degraded, at);
  b.route(at);  // the third trial
  EXPECT_FALSE(b.route(at).trial) << "a non-trial's release gave nothing back";
  b.record(first, true, t0 + seconds(6));  // opened again for 10 s
  const TimePoint next = t0 + seconds(16);
  EXPECT_EQ(b.stage(next), Stage::kDegraded);  // half-open again
  b.release(late, next);                        // a trial of the first round
  std::vector<BreakerRoute> round;
  for (int i = 0; i < 3; ++i) round.push_back(b.route(next));
  EXPECT_FALSE(b.route(next).trial) << "a stale trial's release gave nothing back";
  for (const BreakerRoute& r : round) {
    EXPECT_TRUE(r.trial);
    b.record(r, false, next);
  }
  EXPECT_EQ(b.stage(next), Stage::kClosed);
}

TEST(ModelBreaker, TheBackOffResetsAfterStayingClosedLongEnough) {
  struct Case {
    int failed_trials;    // after the first trip: its last opening is 5 x 2^this
    Duration closed_for;  // then a trip after this long closed
    Duration expected;    // opens for this long
  };
  // Back to base once closed for the longer of the window (30 s) and the
  // last opening.
  for (const Case& c : {Case{0, seconds(29), seconds(10)}, Case{0, seconds(30), seconds(5)},
                        Case{3, seconds(39), seconds(80)}, Case{3, seconds(40), seconds(5)}}) {
    ModelBreaker b(with_variants());
    feed(b, 19, 1, t0);
    TimePoint at = t0 + seconds(5);
    for (int i = 0; i < c.failed_trials; ++i) {
      b.record(b.route(at), true, at);
      at += seconds(5) * (2 << i);
    }
    pass_trials(b, at);
    ASSERT_EQ(b.stage(at), Stage::kClosed);
    b.take_transitions();
    feed(b, 19, 1, at + c.closed_for);
    const auto xs = b.take_transitions();
    ASSERT_EQ(xs.size(), 1u);
    EXPECT_EQ(xs[0].open_for, c.expected) << c.failed_trials << " " << c.closed_for.count();
  }
}

TEST(ModelBreaker, StagesTheModelDoesNotDeclareRouteToThePrimary) {
  ModelBreaker b({});  // neither variant
  feed(b, 19, 1, t0);
  EXPECT_EQ(b.stage(t0), Stage::kDegraded);
  EXPECT_EQ(b.route(t0).target, Target::kPrimary);
  feed(b, 18, 2, t0);
  EXPECT_EQ(b.stage(t0), Stage::kFallback);
  EXPECT_EQ(b.route(t0).target, Target::kPrimary);
  feed(b, 16, 4, t0);
  EXPECT_EQ(b.stage(t0), Stage::kIsolated);
  EXPECT_EQ(b.route(t0).target, Target::kRefuse);  // isolation always refuses

  // With only the fallback declared, degraded still goes to the primary.
  ModelBreaker f({.has_fallback = true});
  feed(f, 19, 1, t0);
  EXPECT_EQ(f.route(t0).target, Target::kPrimary);
  feed(f, 18, 2, t0);
  EXPECT_EQ(f.route(t0).target, Target::kFallback);
}

TEST(ModelBreaker, OutcomesRoutedBeforeAStageChangeAreNotCounted) {
  ModelBreaker b(with_variants());
  std::vector<BreakerRoute> routed;
  for (int i = 0; i < 40; ++i) routed.push_back(b.route(t0));
  for (int i = 0; i < 20; ++i) b.record(routed[i], i == 19, t0);
  EXPECT_EQ(b.stage(t0), Stage::kDegraded);
  // The primary's requests still finishing after the switch fail, all of
  // them: they must not push the breaker on to isolation.
  for (int i = 20; i < 40; ++i) b.record(routed[i], true, t0 + seconds(1));
  EXPECT_EQ(b.stage(t0 + seconds(1)), Stage::kDegraded);
  EXPECT_EQ(b.window_requests(t0 + seconds(1)), 0u);
  EXPECT_DOUBLE_EQ(b.error_rate(t0 + seconds(1)), 0);
  // Nor, once closed, those the degraded variant served.
  const BreakerRoute degraded = b.route(t0 + seconds(2));
  pass_trials(b, t0 + seconds(5));
  ASSERT_EQ(b.stage(t0 + seconds(5)), Stage::kClosed);
  for (int i = 0; i < 20; ++i) b.record(degraded, true, t0 + seconds(6));
  EXPECT_EQ(b.stage(t0 + seconds(6)), Stage::kClosed);
}

TEST(ModelBreaker, TheWindowSlidesBetweenRequests) {
  ModelBreaker b(with_variants());
  feed(b, 6, 0, t0);
  feed(b, 19, 1, t0 + seconds(10));  // 1 in 26: under 5%
  EXPECT_EQ(b.stage(t0 + seconds(29)), Stage::kClosed);
  // t0's successes leave the window: 1 in 20, with no request since.
  EXPECT_EQ(b.stage(t0 + seconds(30)), Stage::kDegraded);
  // And everything leaves it eventually: old failures trip nothing.
  ModelBreaker c(with_variants());
  feed(c, 0, 19, t0);
  feed(c, 0, 1, t0 + seconds(30));
  EXPECT_EQ(c.stage(t0 + seconds(30)), Stage::kClosed);
  EXPECT_EQ(c.window_requests(t0 + seconds(30)), 1u);
}

TEST(ModelBreaker, TimeGoingBackwardsIsTakenAsTheLatest) {
  ModelBreaker b(with_variants());
  feed(b, 19, 1, t0 + seconds(10));
  feed(b, 0, 0, t0);
  EXPECT_EQ(b.stage(t0), Stage::kDegraded);
  EXPECT_EQ(b.route(t0).target, Target::kDegraded);  // not yet half-open at t0 + 10 s
  EXPECT_EQ(b.route(t0 + seconds(15)).trial, true);
  for (const auto& x : b.take_transitions()) EXPECT_GE(x.at, t0 + seconds(10));
}

// Random failures per target, outcomes arriving late and out of order: the
// breaker is never below the stage its window calls for, refuses only when
// isolated, hands out at most probe_requests trials per half-open, opens
// for base x 2^k capped, and closes once the failures stop.
TEST(ModelBreaker, RandomFailuresKeepTheInvariants) {
  uint64_t openings = 0, closings = 0;  // so the run is known to test something
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    ModelBreakerConfig c = with_variants();
    c.has_degraded = seed % 2 == 0;
    c.probe_requests = 1 + seed % 4;
    ModelBreaker b(c);
    struct InFlight {
      BreakerRoute route;
      TimePoint ends;
    };
    std::deque<InFlight> flight;
    double failing[4] = {};  // per target, this phase
    TimePoint now = t0, closed_at = t0;
    Duration last_open{};
    uint32_t trials = 0;
    for (int step = 0; step < 20000; ++step) {
      if (step % 2000 == 0)
        for (double& p : failing) p = std::uniform_real_distribution<double>(0, 0.4)(rng);
      now += milliseconds(std::uniform_int_distribution<int>(0, 50)(rng));
      const BreakerRoute r = b.route(now);
      const Stage stage = b.stage(now);
      ASSERT_EQ(r.target == Target::kRefuse, stage == Stage::kIsolated && !r.trial);
      if (r.target != Target::kRefuse)
        flight.push_back({r, now + milliseconds(std::uniform_int_distribution<int>(0, 3000)(rng))});
      std::shuffle(flight.begin(), flight.end(), rng);
      for (auto it = flight.begin(); it != flight.end();) {
        if (it->ends > now) {
          ++it;
          continue;
        }
        const auto target = static_cast<std::size_t>(it->route.target);
        b.record(it->route, std::bernoulli_distribution(failing[target])(rng), now);
        it = flight.erase(it);
      }
      // Never below what the window calls for.
      const Stage shown = b.stage(now);
      if (b.window_requests(now) >= c.min_requests) {
        const double rate = b.error_rate(now);
        if (rate >= c.isolate_at) {
          ASSERT_EQ(shown, Stage::kIsolated) << seed;
        }
        if (rate >= c.fallback_at) {
          ASSERT_GE(shown, Stage::kFallback) << seed;
        }
        if (rate >= c.degrade_at) {
          ASSERT_GE(shown, Stage::kDegraded) << seed;
        }
      }
      for (const BreakerTransition& x : b.take_transitions()) {
        ASSERT_LE(x.at, now);
        if (x.half_open) {
          ASSERT_EQ(x.from, x.to);
          trials = 0;
        } else if (x.to == Stage::kClosed) {
          ASSERT_EQ(trials, c.probe_requests) << seed;
          closed_at = x.at;
          ++closings;
        } else {
          // Doubled from the last, unless closed long enough to start again.
          const bool calm =
              x.from == Stage::kClosed && x.at - closed_at >= std::max(c.window, last_open);
          ASSERT_EQ(x.open_for, last_open == Duration::zero() || calm
                                    ? c.base_open
                                    : std::min(2 * last_open, c.max_open))
              << seed << " step " << step;
          last_open = x.open_for;
          ++openings;
        }
      }
      if (r.trial) {
        ASSERT_LE(++trials, c.probe_requests) << seed;
      }
    }
    // The failures stop: what is in flight ends well, and within two
    // openings' worth of time the breaker is closed.
    for (const InFlight& f : flight) b.record(f.route, false, now);
    for (int round = 0; round < 4 && b.stage(now) != Stage::kClosed; ++round) {
      now += c.max_open;
      for (uint32_t i = 0; i < c.probe_requests; ++i) b.record(b.route(now), false, now);
    }
    EXPECT_EQ(b.stage(now), Stage::kClosed) << seed;
  }
  EXPECT_GT(openings, 100u);
  EXPECT_GT(closings, 20u);
}

}  // namespace
}  // namespace arbiter::resilience::model_breaker_test
