// The outlier detector: both ejection rules at their thresholds, the
// ejection time and its cap, the count's decay, probes, slow start, holds
// (Retry-After), the pool's ejection cap with 1, 2, 3 and 10 backends, time
// going backwards, and invariants over random failures.
#include "core/resilience/outlier_detector.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <random>

#include "config_error.hpp"

namespace arbiter::resilience {

// States print by name in failures.
static void PrintTo(BackendHealthState state, std::ostream* os) { *os << state_name(state); }

}  // namespace arbiter::resilience

namespace arbiter::resilience::outlier_detector_test {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using S = BackendHealthState;
namespace reason = outlier_reason;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);  // a slice boundary

// Only the consecutive rule; no slow start, no probe: a return is immediate.
OutlierConfig consecutive_only() {
  return {.failure_rate = 2, .slow_start = Duration::zero(), .probe_on_return = false};
}

// `n` failures on `backend` at `at`.
void fail(OutlierDetector& d, uint32_t backend, int n, TimePoint at) {
  for (int i = 0; i < n; ++i) d.record(backend, true, at);
}

// Ejects `backend` by consecutive failures at `at` and returns it through a
// good probe at its ejection's end; returns that end.
TimePoint eject_and_return(OutlierDetector& d, uint32_t backend, TimePoint at) {
  fail(d, backend, 5, at);
  const TimePoint until = d.ejected_until(backend).value();
  d.advance(until);
  d.probe_result(backend, true, until);
  return until;
}

std::size_t excluded_count(const OutlierDetector& d, uint32_t backends) {
  std::size_t n = 0;
  for (uint32_t b = 0; b < backends; ++b) n += d.excluded(b);
  return n;
}

TEST(OutlierDetector, ConfigIsValidated) {
  EXPECT_EQ(validate(OutlierConfig{}), std::nullopt);
  auto error = [](auto edit) { return config_error<OutlierConfig>(edit); };
  EXPECT_NE(error([](auto& c) { c.failure_rate = 0; }).find("failure_rate"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.failure_rate = 0.0 / 0.0; }).find("failure_rate"),
            std::string::npos);
  EXPECT_NE(error([](auto& c) { c.min_requests = 0; }).find("min_requests"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.window = milliseconds(0); }).find("window"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.base_ejection = {}; }).find("base_ejection"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.max_ejection = seconds(4); }).find("max_ejection"),
            std::string::npos);
  EXPECT_NE(error([](auto& c) { c.max_ejected_share = 1.5; }).find("max_ejected_share"),
            std::string::npos);
  EXPECT_NE(error([](auto& c) { c.max_ejected_share = -0.1; }).find("max_ejected_share"),
            std::string::npos);
  EXPECT_NE(error([](auto& c) { c.slow_start = -seconds(1); }).find("slow_start"),
            std::string::npos);
  // Choices, not mistakes: a rule off, one backend at a time, no slow start.
  EXPECT_EQ(error([](auto& c) { c.consecutive_failures = 0; }), "");
  EXPECT_EQ(error([](auto& c) { c.failure_rate = 1.0 / 0.0; }), "");
  EXPECT_EQ(error([](auto& c) { c.max_ejected_share = 0; }), "");
  EXPECT_EQ(error([](auto& c) { c.slow_start = {}; }), "");
}

TEST(OutlierDetector, StateNames) {
  EXPECT_EQ(state_name(S::kHealthy), "healthy");
  EXPECT_EQ(state_name(S::kEjected), "ejected");
  EXPECT_EQ(state_name(S::kProbing), "probing");
  EXPECT_EQ(state_name(S::kSlowStart), "slow_start");
}

TEST(OutlierDetector, ConsecutiveFailuresEjectAtExactlyTheThreshold) {
  OutlierDetector d(consecutive_only(), 4);
  fail(d, 0, 4, t0);
  d.record(0, false, t0);  // a success breaks the run
  fail(d, 0, 4, t0);
  EXPECT_EQ(d.state(0), S::kHealthy);
  EXPECT_TRUE(d.take_transitions().empty());
  d.record(0, true, t0 + seconds(1));  // the fifth in a row
  EXPECT_EQ(d.state(0), S::kEjected);
  EXPECT_TRUE(d.excluded(0));
  EXPECT_EQ(d.ejected_until(0), t0 + seconds(6));
  EXPECT_EQ(d.ejection_count(0), 1u);
  EXPECT_EQ(d.ejections_total(0), 1u);
  const auto xs = d.take_transitions();
  ASSERT_EQ(xs.size(), 1u);
  EXPECT_EQ(xs[0].backend, 0u);
  EXPECT_EQ(xs[0].from, S::kHealthy);
  EXPECT_EQ(xs[0].to, S::kEjected);
  EXPECT_EQ(xs[0].at, t0 + seconds(1));
  EXPECT_EQ(xs[0].ejection, seconds(5));
  EXPECT_EQ(xs[0].reason, reason::kConsecutiveFailures);
  EXPECT_TRUE(d.take_transitions().empty());  // reported once
  // The others are untouched.
  EXPECT_EQ(d.state(1), S::kHealthy);
  EXPECT_FALSE(d.excluded(1));
}

TEST(OutlierDetector, ConsecutiveRuleOff) {
  OutlierConfig c = consecutive_only();
  c.consecutive_failures = 0;
  OutlierDetector d(c, 2);
  fail(d, 0, 1000, t0);
  EXPECT_EQ(d.state(0), S::kHealthy);
}

TEST(OutlierDetector, FailureRateEjectsAtExactlyTheShareWithEnoughVolume) {
  // consecutive off; 10 exchanges with a rate of 0.5.
  const OutlierConfig c{.consecutive_failures = 0, .slow_start = Duration::zero()};
  {
    // 4 failures in 9 exchanges, then a fifth failure: 5 / 10 = 0.5.
    OutlierDetector d(c, 2);
    for (int i = 0; i < 9; ++i) d.record(0, i % 2 == 1, t0);
    EXPECT_EQ(d.state(0), S::kHealthy);
    d.record(0, true, t0);
    EXPECT_EQ(d.state(0), S::kEjected);
    EXPECT_EQ(d.take_transitions().at(0).reason, reason::kFailureRate);
  }
  {
    // 9 failures in a row are below the volume.
    OutlierDetector d(c, 2);
    fail(d, 0, 9, t0);
    EXPECT_EQ(d.state(0), S::kHealthy);
    d.record(0, true, t0);
    EXPECT_EQ(d.state(0), S::kEjected);
  }
  {
    // 4 / 10 is under the rate; the rule is judged on a failure, so 5
    // failures then 5 successes (0.5) eject on the next failure (6 / 11).
    OutlierDetector d(c, 2);
    for (int i = 0; i < 10; ++i) d.record(0, i < 4, t0);
    EXPECT_EQ(d.state(0), S::kHealthy);
    OutlierDetector e(c, 2);
    for (int i = 0; i < 10; ++i) e.record(0, i < 5, t0);
    EXPECT_EQ(e.state(0), S::kHealthy);
    e.record(0, true, t0);
    EXPECT_EQ(e.state(0), S::kEjected);
  }
  {
    // A rate whose product is not a whole double: 3 / 10 against 0.3.
    OutlierConfig r = c;
    r.failure_rate = 0.3;
    OutlierDetector d(r, 2);
    for (int i = 0; i < 7; ++i) d.record(0, false, t0);
    d.record(0, true, t0);
    d.record(0, true, t0);
    EXPECT_EQ(d.state(0), S::kHealthy);
    d.record(0, true, t0);
    EXPECT_EQ(d.state(0), S::kEjected);
  }
}

TEST(OutlierDetector, TheRateForgetsWhatLeftTheWindow) {
  const OutlierConfig c{.consecutive_failures = 0, .slow_start = Duration::zero()};
  OutlierDetector d(c, 2);
  fail(d, 0, 5, t0);
  for (int i = 0; i < 4; ++i) d.record(0, false, t0 + seconds(9));
  // t0's failures leave at t0 + 10 s: 4 successes and 1 failure are left.
  d.record(0, true, t0 + seconds(10));
  EXPECT_EQ(d.state(0), S::kHealthy);
  // Just inside the window they would have counted: 10 exchanges, 6 failed.
  OutlierDetector e(c, 2);
  fail(e, 0, 5, t0);
  for (int i = 0; i < 4; ++i) e.record(0, false, t0 + seconds(9));
  e.record(0, true, t0 + milliseconds(9999));
  EXPECT_EQ(e.state(0), S::kEjected);
}

TEST(OutlierDetector, EjectionTimeGrowsWithTheCountUpToTheCap) {
  OutlierDetector d({.slow_start = Duration::zero()}, 1);
  fail(d, 0, 5, t0);
  TimePoint at = t0;
  // Each failed probe ejects again, for base x count: 5, 10, 15 ... 300 s.
  for (uint32_t count = 1; count <= 62; ++count) {
    EXPECT_EQ(d.ejection_count(0), std::min(count, 60u));
    EXPECT_EQ(d.ejected_until(0), at + std::min<Duration>(seconds(5) * count, seconds(300)));
    at = *d.ejected_until(0);
    d.advance(at);
    EXPECT_EQ(d.state(0), S::kProbing);
    d.probe_result(0, false, at);
    EXPECT_EQ(d.take_transitions().back().reason, reason::kProbeFailed);
  }
  EXPECT_EQ(d.ejections_total(0), 63u);
  EXPECT_EQ(d.ejection_count(0), 60u);  // capped where base x count reaches the cap
}

TEST(OutlierDetector, AProbeDecidesTheReturn) {
  OutlierDetector d({.slow_start = Duration::zero()}, 3);
  fail(d, 1, 5, t0);
  EXPECT_TRUE(d.take_probe_requests().empty());
  d.advance(t0 + milliseconds(4999));
  EXPECT_EQ(d.state(1), S::kEjected);
  // Due at t0 + 5 s, applied by a later call, dated when it fell due.
  d.advance(t0 + seconds(7));
  EXPECT_EQ(d.state(1), S::kProbing);
  EXPECT_TRUE(d.excluded(1));
  EXPECT_EQ(d.ejected_until(1), std::nullopt);
  EXPECT_EQ(d.next_change(), std::nullopt);  // only the probe can change it
  EXPECT_EQ(d.take_probe_requests(), std::vector<uint32_t>{1});
  EXPECT_TRUE(d.take_probe_requests().empty());  // asked for once
  // Failed: ejected again, twice as long.
  d.probe_result(1, false, t0 + seconds(8));
  EXPECT_EQ(d.state(1), S::kEjected);
  EXPECT_EQ(d.ejected_until(1), t0 + seconds(18));
  d.advance(t0 + seconds(18));
  EXPECT_EQ(d.take_probe_requests(), std::vector<uint32_t>{1});
  d.probe_result(1, true, t0 + seconds(19));
  EXPECT_EQ(d.state(1), S::kHealthy);
  EXPECT_FALSE(d.excluded(1));

  const auto xs = d.take_transitions();
  ASSERT_EQ(xs.size(), 5u);
  const S to[] = {S::kEjected, S::kProbing, S::kEjected, S::kProbing, S::kHealthy};
  const std::string_view why[] = {reason::kConsecutiveFailures, reason::kEjectionEnded,
                                  reason::kProbeFailed, reason::kEjectionEnded, reason::kProbeOk};
  const TimePoint at[] = {t0, t0 + seconds(5), t0 + seconds(8), t0 + seconds(18), t0 + seconds(19)};
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(xs[i].to, to[i]) << i;
    EXPECT_EQ(xs[i].reason, why[i]) << i;
    EXPECT_EQ(xs[i].at, at[i]) << i;
    if (i > 0) {
      EXPECT_EQ(xs[i].from, to[i - 1]) << i;
    }
  }
  EXPECT_EQ(xs[2].ejection, seconds(10));
}

TEST(OutlierDetector, WithoutProbesAnEjectionEndsByItself) {
  OutlierDetector d(consecutive_only(), 2);
  fail(d, 0, 5, t0);
  EXPECT_EQ(d.next_change(), t0 + seconds(5));
  d.advance(t0 + seconds(5));
  EXPECT_EQ(d.state(0), S::kHealthy);
  EXPECT_TRUE(d.take_probe_requests().empty());
  EXPECT_EQ(d.next_change(), std::nullopt);
}

TEST(OutlierDetector, ProbesAndRecordsOfABackendInService) {
  OutlierConfig c = consecutive_only();
  c.max_ejected_share = 1;
  OutlierDetector d(c, 2);
  // A periodic probe of a healthy backend counts as an exchange.
  for (int i = 0; i < 4; ++i) d.probe_result(0, false, t0);
  EXPECT_EQ(d.state(0), S::kHealthy);
  d.record(0, true, t0);
  EXPECT_EQ(d.state(0), S::kEjected);
  // While ejected: late exchanges and stale probes decide nothing.
  fail(d, 0, 20, t0 + seconds(1));
  d.probe_result(0, false, t0 + seconds(1));
  EXPECT_EQ(d.ejected_until(0), t0 + seconds(5));
  EXPECT_EQ(d.ejections_total(0), 1u);
  // Back, with a clean slate: four failures do not eject it.
  d.advance(t0 + seconds(5));
  fail(d, 0, 4, t0 + seconds(5));
  EXPECT_EQ(d.state(0), S::kHealthy);
}

TEST(OutlierDetector, TheWindowStartsAfreshOnReturn) {
  OutlierDetector d({.consecutive_failures = 0,
                     .failure_rate = 0.5,
                     .slow_start = Duration::zero(),
                     .probe_on_return = false},
                    2);
  fail(d, 0, 10, t0);
  EXPECT_EQ(d.state(0), S::kEjected);
  d.advance(t0 + seconds(5));
  // Had the window kept its 10 failures, 11 in 20 would eject it again.
  for (int i = 0; i < 9; ++i) d.record(0, false, t0 + seconds(5));
  d.record(0, true, t0 + seconds(5));
  EXPECT_EQ(d.state(0), S::kHealthy);
}

TEST(OutlierDetector, SlowStartRampsFromATenthToAll) {
  OutlierDetector d({.probe_on_return = false}, 2);  // slow_start 10 s
  fail(d, 0, 5, t0);
  EXPECT_EQ(d.capacity_fraction(0, t0), 0);  // excluded
  const TimePoint back = t0 + seconds(5);
  d.advance(back);
  EXPECT_EQ(d.state(0), S::kSlowStart);
  EXPECT_FALSE(d.excluded(0));
  EXPECT_DOUBLE_EQ(d.capacity_fraction(0, back), 0.1);
  EXPECT_DOUBLE_EQ(d.capacity_fraction(0, back + seconds(5)), 0.55);
  EXPECT_DOUBLE_EQ(d.capacity_fraction(0, back + milliseconds(7500)), 0.775);
  EXPECT_DOUBLE_EQ(d.capacity_fraction(0, back + seconds(10)), 1);
  EXPECT_DOUBLE_EQ(d.capacity_fraction(1, back), 1);
  // next_change: each further tenth of capacity, then the end.
  for (int k = 1; k <= 9; ++k) {
    const TimePoint step = *d.next_change();
    EXPECT_EQ(step, back + Duration((Duration(seconds(10)).count() * k + 8) / 9)) << k;
    EXPECT_GE(d.capacity_fraction(0, step), 0.1 + 0.1 * k - 1e-12) << k;
    d.advance(step);
  }
  EXPECT_EQ(d.state(0), S::kHealthy);
  EXPECT_EQ(d.next_change(), std::nullopt);
  const auto xs = d.take_transitions();
  ASSERT_EQ(xs.size(), 3u);
  EXPECT_EQ(xs[1].to, S::kSlowStart);
  EXPECT_EQ(xs[1].reason, reason::kEjectionEnded);
  EXPECT_EQ(xs[2].to, S::kHealthy);
  EXPECT_EQ(xs[2].at, back + seconds(10));
  EXPECT_EQ(xs[2].reason, reason::kSlowStartEnded);
}

TEST(OutlierDetector, AGoodProbeStartsSlowStartAndFailuresThereEjectAgain) {
  OutlierDetector d({}, 2);
  const TimePoint back = eject_and_return(d, 0, t0);
  EXPECT_EQ(d.state(0), S::kSlowStart);
  EXPECT_DOUBLE_EQ(d.capacity_fraction(0, back), 0.1);
  fail(d, 0, 5, back + seconds(1));
  EXPECT_EQ(d.state(0), S::kEjected);
  EXPECT_EQ(d.ejection_count(0), 2u);
  EXPECT_EQ(d.ejected_until(0), back + seconds(11));
  // Long after an ejection that ended in slow start, all is applied in order.
  d.advance(back + seconds(11));
  d.probe_result(0, true, back + seconds(11));
  d.advance(back + seconds(100));
  EXPECT_EQ(d.state(0), S::kHealthy);
}

TEST(OutlierDetector, TheCountDecaysOneStepPerWindowInService) {
  OutlierDetector d({.slow_start = Duration::zero()}, 1);
  TimePoint back = eject_and_return(d, 0, t0);
  EXPECT_EQ(d.ejection_count(0), 1u);
  d.advance(back + milliseconds(9999));
  EXPECT_EQ(d.ejection_count(0), 1u);
  d.advance(back + seconds(10));
  EXPECT_EQ(d.ejection_count(0), 0u);
  // So the next ejection is base-long again.
  fail(d, 0, 5, back + seconds(10));
  EXPECT_EQ(d.ejected_until(0), back + seconds(15));

  // Three in quick succession, then 20 s of service: down to one.
  OutlierDetector e({.slow_start = Duration::zero()}, 1);
  back = t0;
  for (int i = 0; i < 3; ++i) back = eject_and_return(e, 0, back);
  EXPECT_EQ(e.ejection_count(0), 3u);
  e.advance(back + seconds(25));
  EXPECT_EQ(e.ejection_count(0), 1u);
  fail(e, 0, 5, back + seconds(25));
  EXPECT_EQ(e.ejection_count(0), 2u);
  EXPECT_EQ(e.ejected_until(0), back + seconds(35));
  // No decay while out: a probe that keeps it waiting a minute changes nothing.
  e.advance(back + seconds(95));
  EXPECT_EQ(e.state(0), S::kProbing);
  EXPECT_EQ(e.ejection_count(0), 2u);
  // Decay resumes from the return, not from the last step before leaving.
  e.probe_result(0, true, back + seconds(95));
  e.advance(back + seconds(104));
  EXPECT_EQ(e.ejection_count(0), 2u);
  e.advance(back + seconds(105));
  EXPECT_EQ(e.ejection_count(0), 1u);
}

TEST(OutlierDetector, AHoldDoesNotHaltTheCountsDecay) {
  OutlierDetector d({.slow_start = Duration::zero()}, 1);
  const TimePoint back = eject_and_return(d, 0, t0);
  d.hold(0, back + seconds(8), back + seconds(5));
  d.advance(back + seconds(8));
  EXPECT_EQ(d.state(0), S::kHealthy);
  d.advance(back + seconds(10));  // one window since the return, hold included
  EXPECT_EQ(d.ejection_count(0), 0u);
}

// With every backend failing in turn, how many are out at once.
std::size_t most_ejected(uint32_t backends, double share) {
  OutlierConfig c = consecutive_only();
  c.max_ejected_share = share;
  OutlierDetector d(c, backends);
  for (uint32_t b = 0; b < backends; ++b) fail(d, b, 5, t0);
  return excluded_count(d, backends);
}

TEST(OutlierDetector, MaxEjectedShareCapsThePoolButOneMayAlwaysGo) {
  EXPECT_EQ(most_ejected(1, 0.5), 1u);  // the whole pool: panic is the caller's
  EXPECT_EQ(most_ejected(2, 0.5), 1u);
  EXPECT_EQ(most_ejected(3, 0.5), 1u);  // 2 of 3 would be over half
  EXPECT_EQ(most_ejected(10, 0.5), 5u);
  EXPECT_EQ(most_ejected(10, 0), 1u);
  EXPECT_EQ(most_ejected(10, 0.3), 3u);  // 3 / 10 is 0.3 exactly
  EXPECT_EQ(most_ejected(3, 1), 3u);

  OutlierDetector d(consecutive_only(), 3);
  fail(d, 0, 5, t0);
  fail(d, 1, 5, t0);
  EXPECT_EQ(d.state(1), S::kHealthy);
  EXPECT_EQ(d.ejections_refused_total(), 1u);
  // The refused one stays on the verge: its next failure, once there is
  // room, ejects it.
  d.advance(t0 + seconds(5));
  EXPECT_EQ(d.state(0), S::kHealthy);
  d.record(1, true, t0 + seconds(5));
  EXPECT_EQ(d.state(1), S::kEjected);
  EXPECT_EQ(d.ejections_refused_total(), 1u);
}

TEST(OutlierDetector, AHoldExcludesWithoutCountingAsAFailure) {
  OutlierDetector d({}, 3);
  d.hold(2, t0 + seconds(30), t0);
  EXPECT_EQ(d.state(2), S::kEjected);
  EXPECT_TRUE(d.excluded(2));
  EXPECT_EQ(d.ejected_until(2), t0 + seconds(30));
  EXPECT_EQ(d.ejection_count(2), 0u);
  EXPECT_EQ(d.ejections_total(2), 0u);
  auto xs = d.take_transitions();
  ASSERT_EQ(xs.size(), 1u);
  EXPECT_EQ(xs[0].reason, reason::kRetryAfter);
  EXPECT_EQ(xs[0].ejection, seconds(30));
  // A shorter hold meanwhile does not shorten it; a longer one extends it.
  d.hold(2, t0 + seconds(10), t0 + seconds(1));
  EXPECT_EQ(d.ejected_until(2), t0 + seconds(30));
  d.hold(2, t0 + seconds(40), t0 + seconds(1));
  EXPECT_EQ(d.ejected_until(2), t0 + seconds(40));
  EXPECT_TRUE(d.take_transitions().empty());
  // It counts against the pool's share: with one of 3 held, none is ejected.
  fail(d, 0, 5, t0 + seconds(2));
  EXPECT_EQ(d.state(0), S::kHealthy);
  EXPECT_EQ(d.ejections_refused_total(), 1u);
  // It ends without a probe, into slow start.
  d.advance(t0 + seconds(40));
  EXPECT_EQ(d.state(2), S::kSlowStart);
  EXPECT_TRUE(d.take_probe_requests().empty());
  // A hold that is already over does nothing.
  d.hold(1, t0 + seconds(40), t0 + seconds(40));
  EXPECT_EQ(d.state(1), S::kHealthy);
}

TEST(OutlierDetector, AHoldOverAnEjectionKeepsItsProbe) {
  OutlierDetector d({.slow_start = Duration::zero()}, 2);
  fail(d, 0, 5, t0);
  d.hold(0, t0 + seconds(20), t0 + seconds(1));  // outlasts the ejection
  EXPECT_EQ(d.ejected_until(0), t0 + seconds(20));
  d.advance(t0 + seconds(20));
  EXPECT_EQ(d.state(0), S::kProbing);
  // A hold while probing: out again, and the probe is asked for anew after.
  EXPECT_EQ(d.take_probe_requests().size(), 1u);
  d.hold(0, t0 + seconds(30), t0 + seconds(21));
  EXPECT_EQ(d.state(0), S::kEjected);
  d.probe_result(0, true, t0 + seconds(22));  // the old probe: ignored
  EXPECT_EQ(d.state(0), S::kEjected);
  d.advance(t0 + seconds(30));
  EXPECT_EQ(d.state(0), S::kProbing);
  EXPECT_EQ(d.take_probe_requests(), std::vector<uint32_t>{0});
  d.probe_result(0, true, t0 + seconds(31));
  EXPECT_EQ(d.state(0), S::kHealthy);
  EXPECT_EQ(d.ejection_count(0), 1u);  // the hold added nothing
}

TEST(OutlierDetector, TimeGoingBackwardsIsTakenAsTheLatest) {
  OutlierDetector d(consecutive_only(), 2);
  d.advance(t0 + seconds(10));
  fail(d, 0, 5, t0);  // earlier than seen: at t0 + 10 s
  EXPECT_EQ(d.ejected_until(0), t0 + seconds(15));
  d.advance(t0 + seconds(12));
  d.advance(t0);
  EXPECT_EQ(d.state(0), S::kEjected);
  d.hold(1, t0 + seconds(11), t0);  // "until" already passed at the latest time
  EXPECT_EQ(d.state(1), S::kHealthy);
  for (const auto& x : d.take_transitions()) EXPECT_GE(x.at, t0 + seconds(10));
  EXPECT_DOUBLE_EQ(d.capacity_fraction(1, t0), 1);
}

TEST(OutlierDetector, NextChangeIsTheEarliestDue) {
  OutlierConfig c = consecutive_only();
  c.max_ejected_share = 1;
  OutlierDetector e(c, 3);
  EXPECT_EQ(e.next_change(), std::nullopt);
  e.hold(2, t0 + seconds(9), t0);
  fail(e, 0, 5, t0 + seconds(1));
  EXPECT_EQ(e.next_change(), t0 + seconds(6));
  e.advance(t0 + seconds(6));
  EXPECT_EQ(e.next_change(), t0 + seconds(9));
}

// Random failures (and, for odd seeds, holds) and probes over 1 to 7
// backends: without holds the pool never has more out than the share
// allows; each ejection lasts what the count says; every ejection ends.
TEST(OutlierDetector, RandomFailuresKeepTheInvariants) {
  uint64_t ejections = 0, refused = 0;  // so the run is known to test something
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const uint32_t n = 1 + seed % 7;
    OutlierConfig c;
    c.max_ejected_share = std::uniform_real_distribution<double>(0, 1)(rng);
    c.failure_rate = seed % 3 == 0 ? 2 : 0.4;
    c.probe_on_return = seed % 2 == 0;
    OutlierDetector d(c, n);
    const std::size_t cap =
        std::max<std::size_t>(1, static_cast<std::size_t>(c.max_ejected_share * n + 1e-9));
    std::vector<double> bad(n);
    for (double& p : bad) p = std::uniform_real_distribution<double>(0, 1)(rng);
    TimePoint now = t0;
    const bool with_holds = seed % 2 == 1;
    for (int step = 0; step < 4000; ++step) {
      now += milliseconds(std::uniform_int_distribution<int>(0, 400)(rng));
      const uint32_t b = std::uniform_int_distribution<uint32_t>(0, n - 1)(rng);
      const int what = std::uniform_int_distribution<int>(0, 99)(rng);
      if (with_holds && what < 2) {
        d.hold(b, now + seconds(std::uniform_int_distribution<int>(1, 20)(rng)), now);
      } else {
        d.record(b, std::bernoulli_distribution(bad[b])(rng), now);
      }
      for (uint32_t p : d.take_probe_requests()) d.probe_result(p, rng() % 3 != 0, now);
      for (const OutlierTransition& x : d.take_transitions()) {
        ASSERT_LE(x.at, now);
        if (x.to != S::kEjected || x.reason == reason::kRetryAfter) continue;
        ASSERT_LE(x.ejection, c.max_ejection);
        ASSERT_EQ(x.ejection,
                  std::min(c.base_ejection * d.ejection_count(x.backend), c.max_ejection))
            << seed;
      }
      if (!with_holds) {
        ASSERT_LE(excluded_count(d, n), cap) << seed << " step " << step;
      }
      // An ejection ends when due (then a probe or a return): none is left
      // past its end, and none is longer than the cap plus any hold.
      for (uint32_t i = 0; i < n; ++i) {
        if (d.state(i) != S::kEjected) continue;
        ASSERT_GT(*d.ejected_until(i), now);
        ASSERT_LE(*d.ejected_until(i), now + std::max<Duration>(c.max_ejection, seconds(20)));
      }
    }
    refused += d.ejections_refused_total();
    for (uint32_t i = 0; i < n; ++i) ejections += d.ejections_total(i);
    // Healed: every backend is back in service once probes pass and time
    // goes by.
    for (int round = 0; round < 3; ++round) {
      now += c.max_ejection + c.slow_start;
      d.advance(now);
      for (uint32_t p : d.take_probe_requests()) d.probe_result(p, true, now);
    }
    d.advance(now + c.slow_start);
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(d.state(i), S::kHealthy) << seed;
  }
  EXPECT_GT(ejections, 1000u);
  EXPECT_GT(refused, 100u);
}

TEST(OutlierDetector, TheRateRuleEjectsAnOutlierNotAPoolFailingAsAWhole) {
  const OutlierConfig rate_only{.consecutive_failures = 0, .failure_rate = 0.1, .min_requests = 10};
  // Backend 0 fails 3 in 10, its peers none: an outlier.
  OutlierDetector outlier(rate_only, 3);
  for (uint32_t b = 1; b < 3; ++b) {
    for (int i = 0; i < 10; ++i) outlier.record(b, false, t0);
  }
  for (int i = 0; i < 7; ++i) outlier.record(0, false, t0);
  for (int i = 0; i < 3; ++i) outlier.record(0, true, t0);
  EXPECT_EQ(outlier.state(0), S::kEjected);
  // Every backend fails 3 in 10: the pool's weather, nobody is ejected.
  OutlierDetector weather(rate_only, 3);
  for (int i = 0; i < 10; ++i) {
    for (uint32_t b = 0; b < 3; ++b) weather.record(b, i >= 7, t0);  // judged once the volume is there
  }
  for (uint32_t b = 0; b < 3; ++b) EXPECT_EQ(weather.state(b), S::kHealthy) << b;
  // Peers without the volume to compare with: the rate alone decides.
  OutlierDetector quiet(rate_only, 2);
  quiet.record(1, true, t0);
  for (int i = 0; i < 7; ++i) quiet.record(0, false, t0);
  for (int i = 0; i < 3; ++i) quiet.record(0, true, t0);
  EXPECT_EQ(quiet.state(0), S::kEjected);
}

}  // namespace
}  // namespace arbiter::resilience::outlier_detector_test
