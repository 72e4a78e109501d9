// The retry budget: the floor, the share above it and its exact boundary,
// the window and the whole-life bound, the jittered back-off, time going
// backwards, and, over random arrival patterns with every backend failing,
// upstream attempts within 1.1 x client requests and the window's bound at
// every prefix.
#include "core/resilience/retry_budget.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

#include "config_error.hpp"

namespace arbiter::resilience {
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

TEST(RetryBudget, OverItsLifeAPoolRetriesNoMoreThanTheShare) {
  RetryBudget r({});
  // A pool that keeps failing, one request every 4 s: each window would
  // grant the floor afresh, 3 retries for about 2.5 requests.
  int granted = 0;
  for (int i = 0; i < 100; ++i) {
    r.on_request(t0 + seconds(4 * i));
    granted += retries(r, 2, t0 + seconds(4 * i));
  }
  EXPECT_EQ(granted, 10);  // 10% of 100, the first 3 by the floor
  EXPECT_EQ(r.retries_total(), 10u);
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

// Every backend fails: each client request makes its first attempt, then
// retries up to max_retries while the budget allows. Over random arrival
// patterns (bursts, trickles, gaps longer than the window): at every
// prefix, the window holds at most max(min_retries, budget x requests)
// retries, and once the pool has had min_retries / budget requests its
// upstream attempts are at most 1.1 x its client requests.
TEST(RetryBudget, UnderTotalFailureAttemptsStayWithinTheBudget) {
  const RetryConfig c{};
  const Duration slice = c.window / 10;
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng(seed);
    RetryBudget r(c);
    std::deque<TimePoint> window_requests, window_retries;  // the oracle's window
    auto slot = [&](TimePoint t) { return t.time_since_epoch() / slice; };
    auto trim = [&](std::deque<TimePoint>& q, TimePoint now) {
      while (!q.empty() && slot(q.front()) <= slot(now) - 10) q.pop_front();
    };
    uint64_t clients = 0, attempts = 0;
    TimePoint now = t0;
    TimePoint latest = t0;  // the budget takes a time earlier than this as this
    for (int phase = 0; phase < 30; ++phase) {
      // A phase of its own rate: 0.05 to 2,000 requests a second.
      const double per_second = std::pow(10.0, std::uniform_real_distribution<>(-1.3, 3.3)(rng));
      std::exponential_distribution<double> gap(per_second);
      const int count = std::uniform_int_distribution<int>(1, 400)(rng);
      for (int i = 0; i < count; ++i) {
        now += std::chrono::duration_cast<Duration>(std::chrono::duration<double>(gap(rng)));
        r.on_request(now);
        ++clients;
        ++attempts;
        latest = std::max(latest, now);
        window_requests.push_back(latest);
        for (uint32_t retry = 1; retry <= c.max_retries; ++retry) {
          const TimePoint at = now + r.backoff(retry, rng());
          latest = std::max(latest, at);  // granted or not
          if (!r.try_retry(at)) break;
          ++attempts;
          window_retries.push_back(latest);
          trim(window_requests, latest);
          trim(window_retries, latest);
          const double allowed = std::max<double>(
              c.min_retries, c.budget * static_cast<double>(window_requests.size()));
          ASSERT_LE(static_cast<double>(window_retries.size()), allowed + 1e-9)
              << "seed " << seed << " phase " << phase;
        }
        if (clients * c.budget >= c.min_retries) {
          ASSERT_LE(static_cast<double>(attempts),
                    (1 + c.budget) * static_cast<double>(clients) + 1e-9)
              << "seed " << seed << " after " << clients << " requests";
        } else {
          ASSERT_LE(attempts - clients, c.min_retries);
        }
      }
    }
    EXPECT_EQ(r.retries_total(), attempts - clients);
    // The budget is used, not only respected: close to 10% retried.
    EXPECT_GT(static_cast<double>(attempts), 1.08 * static_cast<double>(clients)) << seed;
  }
}

}  // namespace
}  // namespace arbiter::resilience
