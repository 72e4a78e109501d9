// The retry budget: the floor, the share above it and its exact boundary,
// the window (the only bound: an early burst never weighs on a later
// incident), the jittered back-off, time going backwards, and, over random
// arrival and failure patterns, the window's bound checked against a
// reference that knows nothing of slices, both ways: no retry granted past
// it, none refused within it.
#include "core/resilience/retry_budget.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "config_error.hpp"

namespace arbiter::resilience::retry_budget_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);  // a slice boundary

void requests(RetryBudget& r, int n, TimePoint at) {
  for (int i = 0; i < n; ++i) r.on_request(at);
}

// Retries granted out of `n` asked at `at`.
int retries(RetryBudget& r, int n, TimePoint at) {
  int granted = 0;
  for (int i = 0; i < n; ++i) granted += r.try_retry(at);
  return granted;
}

TEST(RetryBudget, ConfigIsValidated) {
  EXPECT_EQ(validate(RetryConfig{}), std::nullopt);
  auto error = [](auto edit) { return config_error<RetryConfig>(edit); };
  EXPECT_NE(error([](auto& c) { c.budget = -0.1; }).find("budget"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.budget = 1.1; }).find("budget"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.budget = 0.0 / 0.0; }).find("budget"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.window = {}; }).find("window"), std::string::npos);
  EXPECT_NE(error([](auto& c) { c.backoff_base = -milliseconds(1); }).find("backoff_base"),
            std::string::npos);
  EXPECT_NE(error([](auto& c) { c.backoff_max = milliseconds(10); }).find("backoff_max"),
            std::string::npos);
  // No retries at all, and none without a wait, are choices.
  EXPECT_EQ(error([](auto& c) {
              c.budget = 0;
              c.min_retries = 0;
            }),
            "");
  EXPECT_EQ(error([](auto& c) { c.backoff_base = c.backoff_max = {}; }), "");
}

TEST(RetryBudget, TheFloorLetsAQuietPoolRetry) {
  RetryBudget r({.min_retries = 3});
  requests(r, 1, t0);
  EXPECT_EQ(retries(r, 5, t0), 3);
  EXPECT_EQ(r.retries_total(), 3u);
  EXPECT_EQ(r.refused_total(), 2u);
  // Even before any request: the floor is a floor.
  RetryBudget fresh({});
  EXPECT_TRUE(fresh.try_retry(t0));
  RetryBudget none({.budget = 0, .min_retries = 0});
  requests(none, 100, t0);
  EXPECT_FALSE(none.try_retry(t0));
}

TEST(RetryBudget, AboveTheFloorRetriesAreAShareOfRequests) {
  RetryBudget r({});
  requests(r, 100, t0);
  EXPECT_EQ(retries(r, 20, t0), 10);
  requests(r, 9, t0);
  EXPECT_EQ(retries(r, 1, t0), 0);  // 11 / 109 is over 10%
  requests(r, 1, t0);
  EXPECT_EQ(retries(r, 2, t0), 1);  // 11 / 110 is not
  // A share whose product with the requests is not a whole double.
  RetryBudget odd({.budget = 0.57});
  requests(odd, 100, t0);
  EXPECT_EQ(retries(odd, 100, t0), 57);
}

TEST(RetryBudget, TheWindowForgetsOldRequestsAndRetries) {
  RetryBudget r({.min_retries = 3});
  requests(r, 1000, t0);
  EXPECT_EQ(retries(r, 10, t0), 10);
  // 10 s on, the old requests have left the window: a burst of failures
  // gets the floor, not 10% of a thousand requests it no longer sees.
  requests(r, 5, t0 + seconds(10));
  EXPECT_EQ(retries(r, 100, t0 + seconds(10)), 3);
  // Nor do the old retries weigh on the next window.
  requests(r, 100, t0 + seconds(20));
  EXPECT_EQ(retries(r, 100, t0 + seconds(20)), 10);
}

// Issue 40: a cap over the pool's whole life let a new pool's first
// incident use its allowance until it had served min_retries / budget
// requests; a later incident's first failures then reached clients.
TEST(RetryBudget, AnEarlyBurstLeavesALaterIncidentItsRetries) {
  RetryBudget r({});
  // A new pool's first incident: 10 requests failing, 10 retries (the floor).
  requests(r, 10, t0);
  EXPECT_EQ(retries(r, 10, t0), 10);
  EXPECT_EQ(retries(r, 1, t0), 0);  // the floor is spent for this window
  // Quiet traffic that never fails: 20 requests in the next minute, far
  // short of the 110 the lifetime cap wanted before an 11th retry.
  for (int i = 1; i <= 20; ++i) r.on_request(t0 + seconds(3 * i));
  // A later incident, the burst out of the window: its failures are retried.
  const TimePoint later = t0 + seconds(61);
  requests(r, 8, later);
  EXPECT_EQ(retries(r, 8, later), 8);
  EXPECT_EQ(r.retries_total(), 18u);
  EXPECT_EQ(r.refused_total(), 1u);
}

// The floor is per window: a pool failing at a low rate gets up to
// min_retries retries in each window, never more.
TEST(RetryBudget, AQuietFailingPoolGetsTheFloorInEachWindow) {
  RetryBudget r({.min_retries = 4});
  // One request a second, each asking for two retries: 20 asked a window.
  int granted_first = 0, granted_second = 0;
  for (int i = 0; i < 10; ++i) {
    r.on_request(t0 + seconds(i));
    granted_first += retries(r, 2, t0 + seconds(i));
  }
  for (int i = 10; i < 20; ++i) {
    r.on_request(t0 + seconds(i));
    granted_second += retries(r, 2, t0 + seconds(i));
  }
  EXPECT_EQ(granted_first, 4);
  EXPECT_EQ(granted_second, 4);
}

TEST(RetryBudget, BackOffIsFullJitterUnderADoublingCap) {
  RetryBudget r({});
  const Duration cap[] = {milliseconds(25),  milliseconds(25),  milliseconds(50), milliseconds(100),
                          milliseconds(200), milliseconds(250), milliseconds(250)};
  for (uint32_t attempt = 0; attempt < 7; ++attempt) {
    const auto top = static_cast<uint64_t>(cap[attempt].count());
    EXPECT_EQ(r.backoff(attempt, 0), Duration::zero()) << attempt;
    EXPECT_EQ(r.backoff(attempt, top), cap[attempt]) << attempt;  // inclusive
    EXPECT_EQ(r.backoff(attempt, top + 1), Duration::zero()) << attempt;
  }
  EXPECT_EQ(r.backoff(1000, ~0ull), Duration(~0ull % (Duration(milliseconds(250)).count() + 1)));
  // Uniform: the mean of many draws is half the cap.
  std::mt19937_64 rng(7);
  double sum = 0;
  for (int i = 0; i < 100000; ++i)
    sum += std::chrono::duration<double>(r.backoff(3, rng())).count();
  EXPECT_NEAR(sum / 100000, 0.050, 0.001);
  RetryBudget flat({.backoff_base = {}, .backoff_max = {}});
  EXPECT_EQ(flat.backoff(5, 12345), Duration::zero());
}

TEST(RetryBudget, TimeGoingBackwardsIsTakenAsTheLatest) {
  RetryBudget r({});
  requests(r, 100, t0 + seconds(30));
  requests(r, 100, t0);  // at t0 + 30 s: 200 in the window
  EXPECT_EQ(retries(r, 30, t0), 20);
}

// Random arrival and failure patterns (bursts, trickles, gaps longer than
// the window, failure rates from none to all), each failed attempt asking
// for a retry up to max_retries. A reference keeps every request and
// retry's time and knows nothing of slices; with slice = window / 10, it
// checks at every retry asked at t:
// - granted: the retries of the last window - slice (this one included)
//   are at most max(min_retries, budget x the requests of the last window);
// - refused: the retries of the last window already reached min_retries,
//   and one more would be over budget x the requests of the last
//   window - slice (the budget never refuses what its bound allows).
TEST(RetryBudget, OverAnyWindowRetriesStayWithinTheBoundAndAreNotRefusedBelowIt) {
  for (const RetryConfig c : {RetryConfig{}, RetryConfig{.budget = 0.25, .min_retries = 3},
                              RetryConfig{.budget = 0, .min_retries = 5}}) {
    const Duration slice = c.window / SlidingCount::kSlices;
    for (uint32_t seed = 1; seed <= 40; ++seed) {
      std::mt19937_64 rng(seed);
      RetryBudget r(c);
      std::vector<TimePoint> request_times, retry_times;  // in order: the times the budget took
      // Events at times in [from, to] (from_open: (from, to]).
      auto in = [](const std::vector<TimePoint>& v, TimePoint from, TimePoint to, bool from_open) {
        const auto lo = from_open ? std::upper_bound(v.begin(), v.end(), from)
                                  : std::lower_bound(v.begin(), v.end(), from);
        return static_cast<uint64_t>(std::upper_bound(v.begin(), v.end(), to) - lo);
      };
      uint64_t granted = 0, refused = 0;
      TimePoint now = t0 + slice * std::uniform_int_distribution<int>(0, 9)(rng) + milliseconds(7);
      TimePoint latest = now;  // the budget takes a time earlier than this as this
      for (int phase = 0; phase < 30; ++phase) {
        // A phase of its own rate (0.05 to 2,000 requests a second) and
        // failure rate (none, some or all).
        const double per_second = std::pow(10.0, std::uniform_real_distribution<>(-1.3, 3.3)(rng));
        const double fail = std::array{0.0, 0.05, 0.3, 1.0}[rng() % 4];
        std::exponential_distribution<double> gap(per_second);
        std::bernoulli_distribution fails(fail);
        const int count = std::uniform_int_distribution<int>(1, 400)(rng);
        for (int i = 0; i < count; ++i) {
          now += std::chrono::duration_cast<Duration>(std::chrono::duration<double>(gap(rng)));
          latest = std::max(latest, now);
          r.on_request(now);
          request_times.push_back(latest);
          for (uint32_t retry = 1; retry <= c.max_retries && fails(rng); ++retry) {
            const TimePoint at = now + r.backoff(retry, rng());
            const TimePoint t = latest = std::max(latest, at);
            const uint64_t retries_window = in(retry_times, t - c.window, t, true);
            const bool ok = r.try_retry(at);
            if (ok) {
              ++granted;
              retry_times.push_back(t);
              const uint64_t recent = in(retry_times, t - (c.window - slice), t, false);
              const uint64_t window_requests = in(request_times, t - c.window, t, true);
              ASSERT_LE(static_cast<double>(recent),
                        std::max<double>(c.min_retries, c.budget * static_cast<double>(window_requests)))
                  << "seed " << seed << " phase " << phase;
              continue;
            }
            ++refused;
            const uint64_t recent_requests = in(request_times, t - (c.window - slice), t, false);
            ASSERT_GE(retries_window + 1, c.min_retries + 1) << "seed " << seed << " phase " << phase;
            ASSERT_TRUE(recent_requests == 0 || static_cast<double>(retries_window + 1) /
                                                        static_cast<double>(recent_requests) >
                                                    c.budget)
                << "seed " << seed << " phase " << phase;
            break;
          }
        }
        // A gap before the next phase, sometimes longer than the window.
        now += std::chrono::duration_cast<Duration>(c.window * std::uniform_real_distribution<>(0, 2)(rng));
      }
      EXPECT_EQ(r.retries_total(), granted);
      EXPECT_EQ(r.refused_total(), refused);
      // Both sides were exercised: the bound is reached, not only respected.
      EXPECT_GT(granted, 0u) << seed;
      EXPECT_GT(refused, 0u) << seed;
    }
  }
}

}  // namespace
}  // namespace arbiter::resilience::retry_budget_test
