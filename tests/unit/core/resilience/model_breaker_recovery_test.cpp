// The model breaker told that an active probe found a backend answering
// (ModelBreaker::backend_recovered, issue 40 defect 5): an opening ends at
// once into half-open trials, whatever is left of its back-off; the trials
// still decide; a closed or half-open breaker is unchanged. On 0807ff3 a
// model whose engine came back waited out the opening (15 s in the drill).
#include "core/resilience/model_breaker.hpp"

#include <gtest/gtest.h>

namespace arbiter::resilience {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);

// Isolated at t0 (an opening of `base_open`): 20 requests, all failed.
ModelBreaker isolated_at_t0(Duration base_open) {
  ModelBreakerConfig config;
  config.base_open = base_open;
  ModelBreaker b(config);
  for (int i = 0; i < 20; ++i) b.record(b.route(t0), true, t0);
  EXPECT_EQ(b.stage(t0), BreakerStage::kIsolated);
  return b;
}

TEST(ModelBreakerRecovery, AProbeEndsTheOpeningAtOnce) {
  ModelBreaker b = isolated_at_t0(seconds(60));
  const TimePoint probe_ok = t0 + seconds(2);
  EXPECT_TRUE(b.waiting_open(probe_ok));
  EXPECT_EQ(b.route(probe_ok).target, BreakerTarget::kRefuse);
  b.take_transitions();
  b.backend_recovered(probe_ok);
  EXPECT_FALSE(b.waiting_open(probe_ok));
  const auto transitions = b.take_transitions();
  ASSERT_EQ(transitions.size(), 1u);
  EXPECT_TRUE(transitions[0].half_open);
  EXPECT_EQ(transitions[0].at, probe_ok);
  // The trials go to the primary now, 58 s before the opening would have ended.
  for (int i = 0; i < 3; ++i) {
    const BreakerRoute r = b.route(probe_ok);
    EXPECT_TRUE(r.trial);
    EXPECT_EQ(r.target, BreakerTarget::kPrimary);
    b.record(r, false, probe_ok);
  }
  EXPECT_EQ(b.stage(probe_ok), BreakerStage::kClosed);
}

TEST(ModelBreakerRecovery, TheTrialsStillDecide) {
  ModelBreaker b = isolated_at_t0(seconds(5));
  const TimePoint at = t0 + seconds(1);
  b.backend_recovered(at);
  const BreakerRoute trial = b.route(at);
  ASSERT_TRUE(trial.trial);
  b.record(trial, true, at);  // the engine answers probes but fails requests
  EXPECT_EQ(b.stage(at), BreakerStage::kIsolated);
  EXPECT_TRUE(b.waiting_open(at + seconds(9)));  // opened again, twice as long
  EXPECT_FALSE(b.waiting_open(at + seconds(10)));
}

TEST(ModelBreakerRecovery, ClosedOrHalfOpenIsUnchanged) {
  ModelBreaker closed({});
  closed.backend_recovered(t0);
  EXPECT_EQ(closed.stage(t0), BreakerStage::kClosed);
  EXPECT_TRUE(closed.take_transitions().empty());

  ModelBreaker b = isolated_at_t0(seconds(5));
  const TimePoint half_open = t0 + seconds(5);
  EXPECT_FALSE(b.waiting_open(half_open));
  const BreakerRoute trial = b.route(half_open);  // one trial out
  ASSERT_TRUE(trial.trial);
  b.take_transitions();
  b.backend_recovered(half_open + milliseconds(10));
  EXPECT_TRUE(b.take_transitions().empty());
  EXPECT_TRUE(b.route(half_open + milliseconds(10)).trial);  // the second of three
}

}  // namespace
}  // namespace arbiter::resilience
