// SLO awareness of the hybrid policy: the rescue of requests about to miss
// their class's ttft_slo, and the early answer for requests predicted to
// wait past their deadline.
#include <gtest/gtest.h>

#include <chrono>

#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using namespace std::chrono_literals;
using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

// One tier of three classes on one slot: "fast" (ttft_slo 200 ms), "slow"
// (2 s) and "other", which holds the slot until `free_at`. slow's s1
// arrives at 0, fast's f1 at 1150; returns who starts when the slot frees.
// Weighted order alone picks fast (equal virtual times, listed first).
uint64_t first_after(int64_t free_at, double lead_fraction, double prefill_rate = 0,
                     int64_t slow_prompt = 0) {
  ClassPolicy fast = named("fast");
  fast.ttft_slo = 200ms;
  ClassPolicy slow = named("slow");
  slow.ttft_slo = 2000ms;
  SchedulerConfig config = one_pool({fast, slow, named("other")}, {1});
  config.slo_lead_fraction = lead_fraction;
  if (prefill_rate > 0) {
    config.pools[0].prefill_tokens_per_s = {prefill_rate};
    config.max_prefill_backlog = 100s;  // the backlog itself never blocks here
  }
  Harness h(config);
  h.add(99, 2, 0, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)), std::vector<uint64_t>{99});
  h.add(1, 1, 0, 10, at_ms(0), {}, std::nullopt, slow_prompt);
  h.add(2, 0, 0, 10, at_ms(1150));
  h.complete(99, at_ms(free_at));
  const auto started = h.poll(at_ms(free_at));
  return started.empty() ? 0 : started.front();
}

TEST(SchedulerSlo, ARequestAboutToMissItsSloGoesFirst) {
  // At 1200 ms s1 has less than half of its 2 s left, f1 more than half of
  // its 200 ms: s1 is rescued ahead of the weighted order.
  EXPECT_EQ(first_after(1200, 0.5), 1u);
  // Without the rescue, the weighted order.
  EXPECT_EQ(first_after(1200, 0), 2u);
}

TEST(SchedulerSlo, AmongRequestsAtRiskTheEarliestSloFirst) {
  // At 1300 ms both are at risk; f1's SLO (1350) comes before s1's (2000).
  EXPECT_EQ(first_after(1300, 0.5), 2u);
}

TEST(SchedulerSlo, NoRescueForARequestThatCanNoLongerMakeIt) {
  // Past its SLO (2100 > 2000): serving it first would only make f1 late too.
  EXPECT_EQ(first_after(2100, 0.5), 2u);
  // Its prompt takes 1 s to prefill at 10k tokens/s: from 1200 ms it cannot
  // make 2000 ms any more.
  EXPECT_EQ(first_after(1200, 0.5, 10'000, 10'000), 2u);
  // 5k tokens (0.5 s) still fit.
  EXPECT_EQ(first_after(1200, 0.5, 10'000, 5'000), 1u);
}

TEST(SchedulerSlo, TheRescueNeverGoesAheadOfABetterPriority) {
  ClassPolicy critical = named("critical");
  critical.engine_priority = 0;
  ClassPolicy chat = named("chat");
  chat.engine_priority = 2;
  chat.ttft_slo = 2000ms;
  Harness h(one_pool({critical, chat}, {1}));
  h.add(1, 1, 0, 10, at_ms(0));
  h.add(2, 0, 0, 10, at_ms(0));
  h.add(3, 0, 0, 10, at_ms(0));
  // chat's request is at risk from 1000 ms, but critical work is ready.
  EXPECT_EQ(h.drain_one_by_one(at_ms(1500)), (std::vector<uint64_t>{2, 3, 1}));
}

// One class on one slot whose requests each run one second; 40 queued by
// tenant 0 at time 0 are served one per second. Returns the scheduler
// after `seconds` of that.
Harness backlogged(int seconds, Policy policy = Policy::kHybrid) {
  ClassPolicy c = named("c");
  c.max_queue_wait = 10s;
  Harness h(one_pool({c}, {1}, policy));
  for (uint64_t i = 0; i < 40; ++i) h.add(i, 0, 0, 10, at_ms(0));
  for (int s = 0; s < seconds; ++s) {
    const auto started = h.poll(at_ms(1000 * s));
    EXPECT_EQ(started.size(), 1u);
    h.complete(started.front(), at_ms(1000 * (s + 1)));
  }
  h.poll(at_ms(1000 * seconds));
  return h;
}

std::expected<Admission, ApiError> one_more(Harness& h, TenantId tenant, int64_t ms) {
  return h.scheduler().enqueue(Request{.user = 100, .pool = 0, .klass = 0, .tenant = tenant, .cost_tokens = 10},
                               at_ms(ms));
}

TEST(SchedulerSlo, WhatCannotStartBeforeItsDeadlineIsAnsweredAtOnce) {
  // After 6 s, 33 requests of tenant 0 wait ahead and one leaves per second:
  // a new one would start in ~34 s, over twice its 10 s limit.
  Harness h = backlogged(6);
  const auto refused = one_more(h, 0, 6000);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kRateLimited);
  ASSERT_TRUE(refused.error().retry_after.has_value());
  // Retry once the queue ahead has drained to what 10 s allow: ~24 s.
  EXPECT_GT(*refused.error().retry_after, 15s);
  EXPECT_LT(*refused.error().retry_after, 35s);
  EXPECT_NE(refused.error().message.find("predicted to wait"), std::string::npos);
  EXPECT_EQ(h.scheduler().counters().total().rejected_predicted, 1u);
  // Another tenant, with nothing queued, is served within its share: admitted.
  EXPECT_TRUE(one_more(h, 1, 6000).has_value());
}

TEST(SchedulerSlo, AnEarlyAnswersRetryAfterStaysWithinTheConfiguredBounds) {
  // A near-zero departure rate predicts an absurd wait: Retry-After is
  // clamped like every other (max_retry_after, here 20 s), the message stays readable.
  const ApiError huge = predicted_late("c", 1e15, 10, std::chrono::milliseconds(100), std::chrono::milliseconds(20'000));
  ASSERT_TRUE(huge.retry_after.has_value());
  EXPECT_EQ(*huge.retry_after, std::chrono::milliseconds(20'000));
  EXPECT_NE(huge.message.find("about 86400 s"), std::string::npos) << huge.message;
  const ApiError tiny = predicted_late("c", 10.01, 10, std::chrono::milliseconds(100), std::chrono::milliseconds(20'000));
  EXPECT_EQ(*tiny.retry_after, std::chrono::milliseconds(100));
}

TEST(SchedulerSlo, NoEarlyAnswerWithoutEvidence) {
  // After 2 s the oldest request has waited less than half its limit: the
  // departure rate still measures the arrivals, not what the class can get.
  Harness fresh = backlogged(2);
  EXPECT_TRUE(one_more(fresh, 0, 2000).has_value());
  // The classic policies never answer early.
  Harness fifo = backlogged(6, Policy::kFifo);
  EXPECT_TRUE(one_more(fifo, 0, 6000).has_value());
}

TEST(SchedulerSlo, NoEarlyAnswerBelowTheBestPriorityInUse) {
  // The same backlog in a class below another that is in use: it gets what
  // the tier above leaves, which a recent rate cannot foresee, so it is
  // never answered early.
  ClassPolicy top = named("top");
  top.engine_priority = 0;
  ClassPolicy low = named("low");
  low.engine_priority = 1;
  low.max_queue_wait = 10s;
  Harness h(one_pool({top, low}, {2}));
  h.add(500, 0, 0, 10, at_ms(0));  // holds one slot the whole time
  for (uint64_t i = 0; i < 40; ++i) h.add(i, 1, 0, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{500, 0}));
  for (uint64_t s = 0; s < 6; ++s) {
    h.complete(s, at_ms(1000 * (s + 1)));
    EXPECT_EQ(h.poll(at_ms(1000 * (s + 1))), std::vector<uint64_t>{s + 1});
  }
  const auto admitted = h.scheduler().enqueue(
      Request{.user = 100, .pool = 0, .klass = 1, .tenant = 0, .cost_tokens = 10}, at_ms(6000));
  EXPECT_TRUE(admitted.has_value());
}

}  // namespace
}  // namespace arbiter::sched
