// The traffic breaker: immediate escalation, red's back-off and its
// doubling, half-open probes, hysteresis on the way down, the back-off's
// reset after calm, transitions reported once, and invariants over random
// demand.
#include "core/quota/traffic_breaker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <ostream>
#include <random>
#include <utility>

namespace arbiter::quota {

// Stages print by name in failures.
static void PrintTo(TrafficStage stage, std::ostream* os) { *os << stage_name(stage); }

}  // namespace arbiter::quota

namespace arbiter::quota::traffic_breaker_test {

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using S = TrafficStage;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);
constexpr double kQuota = 10;  // per second: 100 over the default 10 s window

// `per_second` units a second, in 100 ms steps, from `from` for `how_long`.
// Returns the last verdict.
TrafficBreaker::Verdict ask(TrafficBreaker& b, TimePoint from, Duration how_long,
                            double per_second) {
  TrafficBreaker::Verdict v{};
  for (TimePoint t = from; t < from + how_long; t += milliseconds(100))
    v = b.on_request(t, per_second / 10);
  return v;
}

// The stage a demand ratio calls for, as the product brief puts it.
S called_for(const TrafficBreakerSettings& s, double ratio) {
  return ratio > s.block_at      ? S::kRed
         : ratio > s.degrade_at  ? S::kOrange
         : ratio > s.throttle_at ? S::kYellow
                                 : S::kGreen;
}

void expect_near(TimePoint a, TimePoint b) { EXPECT_LE(std::chrono::abs(a - b), microseconds(1)); }

TEST(TrafficBreaker, SettingsAreValidated) {
  EXPECT_EQ(validate({}), std::nullopt);
  auto error = [](auto change) {
    TrafficBreakerSettings s;
    change(s);
    return validate(s).value_or("");
  };
  EXPECT_NE(error([](auto& s) { s.throttle_at = 0; }).find("throttle_at must be > 0"),
            std::string::npos);
  EXPECT_NE(error([](auto& s) { s.degrade_at = 1.5; }).find("thresholds must increase"),
            std::string::npos);
  EXPECT_NE(error([](auto& s) { s.block_at = 1.9; }).find("thresholds must increase"),
            std::string::npos);
  EXPECT_NE(error([](auto& s) { s.block_at = 1.0 / 0.0; }).find("block_at must be finite"),
            std::string::npos);
  EXPECT_NE(error([](auto& s) { s.window = microseconds(999); }).find("window"), std::string::npos);
  EXPECT_NE(error([](auto& s) { s.hold = -seconds(1); }).find("hold"), std::string::npos);
  EXPECT_NE(error([](auto& s) { s.base_backoff = {}; }).find("base_backoff must be > 0"),
            std::string::npos);
  EXPECT_NE(error([](auto& s) { s.max_backoff = seconds(4); }).find("max_backoff"),
            std::string::npos);
  EXPECT_NE(error([](auto& s) { s.probe_every = 0; }).find("probe_every"), std::string::npos);
  EXPECT_EQ(error([](auto& s) { s.hold = {}; }), "");  // no hysteresis is a choice
}

TEST(TrafficBreaker, StageNames) {
  EXPECT_EQ(stage_name(S::kGreen), "green");
  EXPECT_EQ(stage_name(S::kYellow), "yellow");
  EXPECT_EQ(stage_name(S::kOrange), "orange");
  EXPECT_EQ(stage_name(S::kRed), "red");
}

TEST(TrafficBreaker, DemandRatioReadsASteadyRateAsItself) {
  TrafficBreaker b({}, kQuota);
  ask(b, t0, seconds(30), 20);  // 2x
  // Anywhere inside a slice, not only at its edges.
  for (int ms : {0, 1, 30, 50, 99})
    EXPECT_NEAR(b.demand_ratio(t0 + milliseconds(29900 + ms)), 2.0, 0.03) << ms;
  // Nothing more asked: the last 10 s leave the window one by one.
  EXPECT_NEAR(b.demand_ratio(t0 + seconds(35)), 1.0, 1e-9);
  EXPECT_EQ(b.demand_ratio(t0 + seconds(41)), 0);
  // The window is a fixed ring, whatever the traffic: 1,000 tenants cost
  // a few hundred KB.
  EXPECT_LE(sizeof(TrafficBreaker), 512u);
}

TEST(TrafficBreaker, EscalationIsImmediateAtEachThreshold) {
  TrafficBreaker b({}, kQuota);                       // 100 units fill the window at 1x
  EXPECT_EQ(b.on_request(t0, 150).stage, S::kGreen);  // 1.5x is not over 1.5x
  auto v = b.on_request(t0, 1);
  EXPECT_EQ(v.stage, S::kYellow);
  EXPECT_TRUE(v.admit);
  EXPECT_EQ(b.on_request(t0, 49).stage, S::kYellow);
  EXPECT_EQ(b.on_request(t0, 1).stage, S::kOrange);
  EXPECT_EQ(b.on_request(t0, 99).stage, S::kOrange);
  v = b.on_request(t0, 1);
  EXPECT_EQ(v.stage, S::kRed);
  EXPECT_FALSE(v.admit);  // the request that trips it is refused too
  EXPECT_EQ(v.retry_after, seconds(5));

  const auto xs = b.take_transitions();
  ASSERT_EQ(xs.size(), 3u);
  const S from[] = {S::kGreen, S::kYellow, S::kOrange}, to[] = {S::kYellow, S::kOrange, S::kRed};
  const double ratio[] = {1.51, 2.01, 3.01};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(xs[i].at, t0);
    EXPECT_EQ(xs[i].from, from[i]);
    EXPECT_EQ(xs[i].to, to[i]);
    EXPECT_DOUBLE_EQ(xs[i].demand_ratio, ratio[i]);
    EXPECT_EQ(xs[i].backoff, i == 2 ? seconds(5) : Duration::zero());
  }
  // Reported once.
  EXPECT_TRUE(b.take_transitions().empty());
  EXPECT_EQ(b.stage(t0 + seconds(1)), S::kRed);
  EXPECT_TRUE(b.take_transitions().empty());
}

TEST(TrafficBreaker, ADemandJumpSkipsStages) {
  TrafficBreaker b({}, kQuota);
  EXPECT_EQ(b.on_request(t0, 250).stage, S::kOrange);
  EXPECT_EQ(b.on_request(t0 + seconds(1), 100).stage, S::kRed);
  const auto xs = b.take_transitions();
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_EQ(xs[0].from, S::kGreen);
  EXPECT_EQ(xs[0].to, S::kOrange);
  EXPECT_EQ(xs[1].from, S::kOrange);
  EXPECT_EQ(xs[1].to, S::kRed);
  EXPECT_EQ(xs[1].at, t0 + seconds(1));
}

TEST(TrafficBreaker, RedRefusesWithTheBackOffLeftThenHalfOpens) {
  TrafficBreaker b({}, kQuota);
  b.on_request(t0, 400);
  auto v = b.on_request(t0 + seconds(1), 1);
  EXPECT_EQ(v.stage, S::kRed);
  EXPECT_FALSE(v.admit);
  EXPECT_EQ(v.retry_after, seconds(4));
  v = b.on_request(t0 + milliseconds(4900), 1);
  EXPECT_FALSE(v.admit);
  EXPECT_EQ(v.retry_after, milliseconds(100));
  // Refused requests count as demand.
  EXPECT_DOUBLE_EQ(b.demand_ratio(t0 + milliseconds(4900)), 4.02);
  EXPECT_EQ(b.stage(t0 + seconds(5) - nanoseconds(1)), S::kRed);

  // Half-open: the first request is a probe, measured afresh.
  EXPECT_EQ(b.demand_ratio(t0 + seconds(5)), 0);
  v = b.on_request(t0 + seconds(5), 1);
  EXPECT_EQ(v.stage, S::kRed);
  EXPECT_TRUE(v.admit);
  EXPECT_EQ(v.retry_after, Duration::zero());
  EXPECT_DOUBLE_EQ(b.demand_ratio(t0 + seconds(5)), 0.01);
  // The next is not; it may come back when the probe ends.
  v = b.on_request(t0 + seconds(6), 1);
  EXPECT_FALSE(v.admit);
  EXPECT_EQ(v.retry_after, seconds(9));
  EXPECT_EQ(b.take_transitions().size(), 1u);  // half-open is still red: no transition
}

TEST(TrafficBreaker, BackOffDoublesOnConsecutiveTripsUpToTheMax) {
  TrafficBreaker b({}, kQuota);
  TimePoint t = t0;
  std::vector<Duration> backoffs;
  for (int trip = 0; trip < 9; ++trip) {
    const auto v = b.on_request(t, 400);  // over 3x at once, green or half-open alike
    ASSERT_EQ(v.stage, S::kRed);
    ASSERT_FALSE(v.admit);
    backoffs.push_back(v.retry_after);
    t += v.retry_after;  // the back-off ends: half-open
  }
  const std::vector<Duration> expected = {seconds(5),   seconds(10),  seconds(20),
                                          seconds(40),  seconds(80),  seconds(160),
                                          seconds(300), seconds(300), seconds(300)};
  EXPECT_EQ(backoffs, expected);
  const auto xs = b.take_transitions();
  ASSERT_EQ(xs.size(), 9u);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(xs[i].to, S::kRed);
    EXPECT_EQ(xs[i].from, i == 0 ? S::kGreen : S::kRed);  // then trips from half-open
    EXPECT_EQ(xs[i].backoff, expected[i]);
  }
}

TEST(TrafficBreaker, HalfOpenLetsExactlyOneInProbeEveryThrough) {
  for (uint32_t every : {10u, 4u}) {
    SCOPED_TRACE(every);
    TrafficBreakerSettings s;
    s.probe_every = every;
    TrafficBreaker b(s, kQuota);
    b.on_request(t0, 400);
    const TimePoint open = t0 + seconds(5);
    int admitted = 0;
    for (int i = 0; i < 100; ++i) {  // 100 units in 1 s: 1x, no new trip
      const TimePoint t = open + milliseconds(10 * i);
      const auto v = b.on_request(t, 1);
      EXPECT_EQ(v.stage, S::kRed);
      EXPECT_EQ(v.admit, i % every == 0) << i;
      EXPECT_EQ(v.retry_after, v.admit ? Duration::zero() : open + seconds(10) - t) << i;
      admitted += v.admit;
    }
    EXPECT_EQ(admitted, every == 10 ? 10 : 25);
    // The probe lasts one window; at 1x it ends straight in green.
    EXPECT_EQ(b.stage(open + seconds(10) - nanoseconds(1)), S::kRed);
    EXPECT_EQ(b.stage(open + seconds(10)), S::kGreen);
    const auto xs = b.take_transitions();
    ASSERT_EQ(xs.size(), 2u);
    EXPECT_EQ(xs[1].from, S::kRed);
    EXPECT_EQ(xs[1].to, S::kGreen);
    EXPECT_EQ(xs[1].at, open + seconds(10));
    EXPECT_NEAR(xs[1].demand_ratio, 1.0, 1e-9);
    EXPECT_TRUE(b.on_request(open + seconds(10), 1).admit);
  }
}

TEST(TrafficBreaker, HalfOpenTripsAgainWhileDemandStaysHigh) {
  TrafficBreaker b({}, kQuota);
  b.on_request(t0, 400);
  const TimePoint open = t0 + seconds(5);
  // 4x throughout the probe: the fresh window passes 3x (300 units at 40/s)
  // after 7.5 s, and trips then, not at the probe's end.
  const auto last = ask(b, open, seconds(10), 40);
  const auto xs = b.take_transitions();
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_EQ(xs[1].from, S::kRed);
  EXPECT_EQ(xs[1].to, S::kRed);
  EXPECT_EQ(xs[1].at, open + milliseconds(7500));
  EXPECT_NEAR(xs[1].demand_ratio, 3.04, 1e-9);
  EXPECT_EQ(xs[1].backoff, seconds(10));
  // Everything after the new trip is refused until its back-off ends.
  EXPECT_FALSE(last.admit);
  EXPECT_EQ(last.retry_after, open + milliseconds(17500) - (open + milliseconds(9900)));
}

TEST(TrafficBreaker, AProbeEndsInTheStageItsDemandCallsFor) {
  TrafficBreaker b({}, kQuota);
  b.on_request(t0, 400);
  const TimePoint open = t0 + seconds(5);
  ask(b, open, seconds(10), 25);  // 2.5x: under block_at, over degrade_at
  EXPECT_EQ(b.stage(open + seconds(10)), S::kOrange);
  const auto xs = b.take_transitions();
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_EQ(xs[1].from, S::kRed);
  EXPECT_EQ(xs[1].to, S::kOrange);
  EXPECT_NEAR(xs[1].demand_ratio, 2.5, 1e-9);
  // From there down, the hold applies as usual: 2.5x stays orange.
  ask(b, open + seconds(10), seconds(20), 25);
  EXPECT_EQ(b.stage(open + seconds(30)), S::kOrange);
  EXPECT_TRUE(b.take_transitions().empty());
}

TEST(TrafficBreaker, StepsDownOnlyAfterTheHold) {
  TrafficBreaker b({}, kQuota);
  b.on_request(t0, 250);  // orange
  // Nothing more asked: the burst's slice leaves the window over
  // [t0 + 10 s, t0 + 11 s], so the demand is at 2x at t0 + 10.2 s and at
  // 1.5x at t0 + 10.4 s; each step down comes a hold (5 s) later.
  EXPECT_EQ(b.stage(t0 + seconds(10)), S::kOrange);
  EXPECT_EQ(b.stage(t0 + milliseconds(15200) - microseconds(1)), S::kOrange);
  EXPECT_EQ(b.stage(t0 + milliseconds(15200) + microseconds(1)), S::kYellow);
  EXPECT_EQ(b.stage(t0 + milliseconds(15400) - microseconds(1)), S::kYellow);
  EXPECT_EQ(b.stage(t0 + milliseconds(15400) + microseconds(1)), S::kGreen);
  const auto xs = b.take_transitions();
  ASSERT_EQ(xs.size(), 3u);
  EXPECT_EQ(xs[1].from, S::kOrange);
  EXPECT_EQ(xs[1].to, S::kYellow);
  expect_near(xs[1].at, t0 + milliseconds(15200));
  EXPECT_EQ(xs[1].demand_ratio, 0);  // the demand when the step came: the burst left by t0 + 11 s
  EXPECT_EQ(xs[2].from, S::kYellow);
  EXPECT_EQ(xs[2].to, S::kGreen);
  expect_near(xs[2].at, t0 + milliseconds(15400));
}

TEST(TrafficBreaker, ATenantBackAfterAQuietSpellFindsTheStageItWouldHaveHad) {
  TrafficBreaker b({}, kQuota);
  b.on_request(t0, 250);  // orange
  // No call for a minute: the steps down fell due meanwhile, and are dated then.
  const auto v = b.on_request(t0 + seconds(60), 1);
  EXPECT_EQ(v.stage, S::kGreen);
  const auto xs = b.take_transitions();
  ASSERT_EQ(xs.size(), 3u);
  expect_near(xs[1].at, t0 + milliseconds(15200));
  expect_near(xs[2].at, t0 + milliseconds(15400));
  EXPECT_EQ(xs[2].to, S::kGreen);
}

TEST(TrafficBreaker, DoesNotFlapAroundAThresholdFasterThanTheHold) {
  // 2 s at 2.5x, 2 s at 1.5x, over and over: a 10 s window (2.5 periods)
  // holds between 1.9x and 2.1x, at or under 2x about 2 s in every 4.
  auto run = [](Duration hold) {
    TrafficBreakerSettings s;
    s.hold = hold;
    TrafficBreaker b(s, kQuota);
    for (int period = 0; period < 15; ++period) {
      const TimePoint start = t0 + seconds(4 * period);
      ask(b, start, seconds(2), 25);
      ask(b, start + seconds(2), seconds(2), 15);
      if (period == 3) {  // warmed up: orange by now
        EXPECT_EQ(b.stage(start + seconds(4)), S::kOrange);
        b.take_transitions();
      }
    }
    return std::pair(b.take_transitions(), b.stage(t0 + seconds(60)));
  };
  const auto [steady, stage] = run(seconds(5));
  EXPECT_TRUE(steady.empty()) << steady.size() << " transitions";
  EXPECT_EQ(stage, S::kOrange);
  // The control: a hold shorter than the dips steps down and back up.
  EXPECT_GE(run(seconds(1)).first.size(), 10u);
}

TEST(TrafficBreaker, BackOffResetsAfterACalmPeriod) {
  // `trips` consecutive trips, a probe that finds nothing asked (green at
  // its end), `calm` in green, then a trip: its back-off.
  auto next_backoff = [](int trips, Duration calm) {
    TrafficBreaker b({}, kQuota);
    TimePoint t = t0;
    for (int i = 0; i < trips; ++i) t += b.on_request(t, 400).retry_after;
    const TimePoint out = t + seconds(10);
    EXPECT_EQ(b.stage(out), S::kGreen);
    return b.on_request(out + calm, 400).retry_after;
  };
  // Calm means out of red for the longer of the last back-off and the window (10 s).
  EXPECT_EQ(next_backoff(1, seconds(1)), seconds(10));
  EXPECT_EQ(next_backoff(1, seconds(10) - nanoseconds(1)), seconds(10));
  EXPECT_EQ(next_backoff(1, seconds(10)), seconds(5));
  EXPECT_EQ(next_backoff(3, seconds(20) - nanoseconds(1)), seconds(40));  // 5, 10, 20, then 40
  EXPECT_EQ(next_backoff(3, seconds(20)), seconds(5));
}

TEST(TrafficBreaker, AnEarlierTimeIsTakenAsTheLatestSeen) {
  TrafficBreaker b({}, kQuota);
  b.on_request(t0 + seconds(10), 400);
  const auto v = b.on_request(t0, 1);
  EXPECT_EQ(v.stage, S::kRed);
  EXPECT_EQ(v.retry_after, seconds(5));
  EXPECT_DOUBLE_EQ(b.demand_ratio(t0), 4.01);
}

// Random demand (a drifting rate, jumps, quiet spells) under random
// settings, checked call by call against what the brief promises.
TEST(TrafficBreaker, InvariantsHoldOverRandomDemand) {
  std::mt19937 rng(20240611);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  for (int trial = 0; trial < 100; ++trial) {
    SCOPED_TRACE(trial);
    TrafficBreakerSettings s;
    s.window = milliseconds(10 * uniform(100, 1000));
    s.hold = milliseconds(uniform(0, 6000));
    s.base_backoff = milliseconds(uniform(100, 5000));
    s.max_backoff = s.base_backoff * uniform(1, 20);
    s.probe_every = static_cast<uint32_t>(uniform(1, 12));
    ASSERT_EQ(validate(s), std::nullopt);
    TrafficBreaker b(s, kQuota);

    TimePoint now = t0, prev = t0;
    double rate = 0;                        // demand, as a multiple of the quota
    S stage = S::kGreen;                    // the last transition's `to`
    std::optional<TrafficTransition> trip;  // the last trip
    TimePoint left_red{};
    uint32_t half_open_seen = 0;  // requests since the last trip's back-off ended
    std::deque<std::pair<TimePoint, double>> recent;  // calls within a hold: time, demand after
    for (int step = 0; step < 400; ++step) {
      rate =
          chance(0.05) ? uniform(0, 60) / 10.0 : std::clamp(rate + uniform(-2, 2) / 10.0, 0.0, 6.0);
      const bool quiet = chance(0.01);
      const Duration gap = quiet ? seconds(uniform(1, 60)) : milliseconds(uniform(1, 300));
      now += gap;
      const bool call = !chance(0.05);  // or only look at the stage
      const double amount = quiet ? 1
                                  : rate * kQuota * std::chrono::duration<double>(gap).count() *
                                        uniform(5, 15) / 10.0;
      const auto v =
          call ? b.on_request(now, amount) : TrafficBreaker::Verdict{b.stage(now), false, {}};
      const double ratio = b.demand_ratio(now);

      for (const TrafficTransition& x : b.take_transitions()) {
        // A chain, dated between the previous call and this one.
        EXPECT_EQ(x.from, stage);
        EXPECT_GE(x.at, prev);
        EXPECT_LE(x.at, now);
        EXPECT_TRUE(x.from != x.to || x.to == S::kRed);  // only a trip from half-open repeats
        if (x.to == S::kRed) {
          // Red only for demand over block_at, with a back-off that doubles
          // unless calm came first, never over the max.
          EXPECT_EQ(x.at, now);
          EXPECT_GT(x.demand_ratio, s.block_at);
          const bool consecutive =
              trip && (x.from == S::kRed || x.at - left_red < std::max(trip->backoff, s.window));
          EXPECT_EQ(x.backoff,
                    consecutive ? std::min(2 * trip->backoff, s.max_backoff) : s.base_backoff);
          EXPECT_LE(x.backoff, s.max_backoff);
          trip = x;
          half_open_seen = 0;
        } else if (x.from == S::kRed) {
          // Out of red only when a probe of one window ends.
          EXPECT_EQ(x.at, trip->at + trip->backoff + s.window);
          EXPECT_EQ(x.to, called_for(s, x.demand_ratio));
          left_red = x.at;
        } else if (x.to > x.from) {
          EXPECT_EQ(x.at, now);  // up: at once
          EXPECT_EQ(x.to, called_for(s, x.demand_ratio));
        } else {
          // Down: one stage, after a hold in which no call saw the demand
          // over that stage's threshold.
          EXPECT_EQ(static_cast<int>(x.to), static_cast<int>(x.from) - 1);
          const double threshold = x.from == S::kOrange ? s.degrade_at : s.throttle_at;
          EXPECT_LE(x.demand_ratio, threshold + 1e-9);
          for (const auto& [t, r] : recent)
            EXPECT_TRUE(t <= x.at - s.hold || r <= threshold + 1e-9);
        }
        stage = x.to;
      }
      EXPECT_EQ(v.stage, stage);
      // Escalation never lags the demand.
      EXPECT_GE(v.stage, called_for(s, ratio));
      if (call && v.stage != S::kRed) {
        EXPECT_TRUE(v.admit);
        EXPECT_EQ(v.retry_after, Duration::zero());
      } else if (call) {
        const TimePoint open = trip->at + trip->backoff;
        if (now < open) {
          EXPECT_FALSE(v.admit);
          EXPECT_EQ(v.retry_after, open - now);
        } else {
          // Half-open, for one window: exactly 1 in probe_every goes through.
          EXPECT_LT(now, open + s.window);
          EXPECT_EQ(v.admit, half_open_seen % s.probe_every == 0);
          EXPECT_EQ(v.retry_after, v.admit ? Duration::zero() : open + s.window - now);
          ++half_open_seen;
        }
      }
      if (call) recent.emplace_back(now, ratio);
      while (!recent.empty() && recent.front().first <= now - s.hold) recent.pop_front();
      prev = now;
    }
    // Left alone long enough, any breaker is back to green, its demand
    // gone, and then its back-off too.
    const TimePoint later = now + s.max_backoff + 3 * s.window + s.hold;
    EXPECT_EQ(b.stage(later), S::kGreen);
    EXPECT_EQ(b.demand_ratio(later), 0);
    const TimePoint calm = later + std::max(s.max_backoff, s.window);
    EXPECT_EQ(b.on_request(calm, 1e9).retry_after, s.base_backoff);
  }
}

}  // namespace
}  // namespace arbiter::quota::traffic_breaker_test
