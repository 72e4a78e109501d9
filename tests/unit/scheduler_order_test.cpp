// Dispatch order of the three policies: fifo, strict priority, hybrid
// (guarantees, weighted tokens, tenant fairness, EDF, aging, caps).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using namespace std::chrono_literals;
using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

// Two classes: "a" (engine priority 5, weight 1) and "b" (priority 0,
// weight 3); one slot; a1 b1 a2 b2 a3 b3 a4 b4 arrive in that order.
std::vector<uint64_t> interleaved_order(Policy policy) {
  ClassPolicy a = named("a");
  a.engine_priority = 5;
  ClassPolicy b = named("b");
  b.engine_priority = 0;
  b.weight = 3;
  Harness h(one_pool({a, b}, {1}, policy));
  for (uint64_t i = 0; i < 4; ++i) {
    h.add(10 + i, 0, 0, 10, at_ms(0));
    h.add(20 + i, 1, 0, 10, at_ms(0));
  }
  return h.drain_one_by_one(at_ms(1));
}

TEST(SchedulerOrder, FifoIsGlobalArrivalOrder) {
  EXPECT_EQ(interleaved_order(Policy::kFifo),
            (std::vector<uint64_t>{10, 20, 11, 21, 12, 22, 13, 23}));
}

TEST(SchedulerOrder, PriorityIsStrictByEnginePriority) {
  EXPECT_EQ(interleaved_order(Policy::kPriority),
            (std::vector<uint64_t>{20, 21, 22, 23, 10, 11, 12, 13}));
}

TEST(SchedulerOrder, HybridSharesByWeight) {
  // Virtual times: a pays 10 per request, b pays 10/3; ties go to class order.
  EXPECT_EQ(interleaved_order(Policy::kHybrid),
            (std::vector<uint64_t>{10, 20, 21, 22, 11, 23, 12, 13}));
}

TEST(SchedulerOrder, WeightedSharingIsChargedInTokensNotRequests) {
  // "long" requests cost 10x "short" ones; equal weights must give equal
  // tokens, so short gets about 10 requests per long one.
  Harness h(one_pool({named("long"), named("short")}, {1}));
  for (uint64_t i = 0; i < 50; ++i) h.add(i, 0, 0, 1000, at_ms(0));
  for (uint64_t i = 0; i < 500; ++i) h.add(1000 + i, 1, 0, 100, at_ms(0));
  const auto order = h.drain_one_by_one(at_ms(1), 220);
  const auto longs = std::count_if(order.begin(), order.end(), [](uint64_t u) { return u < 1000; });
  EXPECT_NEAR(static_cast<double>(longs), 20.0, 1.0);  // 20 * 1000 tokens vs 200 * 100
}

TEST(SchedulerOrder, ClassBelowMinShareGoesFirst) {
  // rt has a tiny weight but half the pool guaranteed: it always holds one of
  // the two slots while it has work, whatever its virtual time.
  ClassPolicy rt = named("rt");
  rt.min_share = 0.5;
  rt.weight = 0.01;
  Harness h(one_pool({rt, named("std")}, {2}));
  for (uint64_t i = 0; i < 10; ++i) h.add(100 + i, 1, 0, 100, at_ms(0));
  for (uint64_t i = 0; i < 10; ++i) h.add(i, 0, 0, 100, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(1)), (std::vector<uint64_t>{0, 100}));
  h.complete(100, at_ms(2));
  EXPECT_EQ(h.poll(at_ms(2)), (std::vector<uint64_t>{101}));  // rt is at its guarantee
  h.complete(0, at_ms(3));
  EXPECT_EQ(h.poll(at_ms(3)), (std::vector<uint64_t>{1}));  // rt below it again
}

// A high class that always has work and a low one; one slot; 40 decisions.
int low_class_dispatches(Policy policy) {
  ClassPolicy hi = named("hi");
  hi.weight = 3;
  ClassPolicy lo = named("lo");
  lo.engine_priority = 1;
  Harness h(one_pool({hi, lo}, {1}, policy));
  for (uint64_t i = 0; i < 20; ++i) h.add(1000 + i, 1, 0, 100, at_ms(0));
  uint64_t next_hi = 0;
  for (int i = 0; i < 5; ++i) h.add(next_hi++, 0, 0, 100, at_ms(0));
  int low = 0;
  for (int step = 0; step < 40; ++step) {
    const auto started = h.poll(at_ms(step));
    EXPECT_EQ(started.size(), 1u);
    if (started.front() >= 1000) ++low;
    h.complete(started.front(), at_ms(step));
    h.add(next_hi++, 0, 0, 100, at_ms(step));  // hi never runs dry
  }
  return low;
}

TEST(SchedulerOrder, PriorityStarvesTheLowClassHybridServesItsShare) {
  EXPECT_EQ(low_class_dispatches(Policy::kPriority), 0);
  const int hybrid = low_class_dispatches(Policy::kHybrid);
  EXPECT_GE(hybrid, 9);  // weight 1 of 4: a quarter of 40
  EXPECT_LE(hybrid, 11);
}

TEST(SchedulerOrder, FloodingTenantDoesNotStarveAnother) {
  // Tenant 1 queues 100 requests first, tenant 2 then queues 10: with tenant
  // fair sharing they alternate, so tenant 2 is done within 20 dispatches;
  // under fifo it would wait behind all 100.
  for (const Policy policy : {Policy::kHybrid, Policy::kFifo}) {
    Harness h(one_pool({named("c")}, {1}, policy));
    for (uint64_t i = 0; i < 100; ++i) h.add(i, 0, 1, 100, at_ms(0));
    for (uint64_t i = 0; i < 10; ++i) h.add(1000 + i, 0, 2, 100, at_ms(1));
    const auto order = h.drain_one_by_one(at_ms(2));
    ASSERT_EQ(order.size(), 110u);
    const auto last_of_2 = std::find(order.begin(), order.end(), 1009) - order.begin();
    if (policy == Policy::kHybrid) {
      EXPECT_LE(last_of_2, 20);
    } else {
      EXPECT_EQ(last_of_2, 109);
    }
  }
}

TEST(SchedulerOrder, TenantWeightsSplitTheClass) {
  SchedulerConfig config = one_pool({named("c")}, {1});
  config.tenant_weights = {{2, 3.0}};
  Harness h(std::move(config));
  for (uint64_t i = 0; i < 100; ++i) {
    h.add(i, 0, 1, 100, at_ms(0));
    h.add(1000 + i, 0, 2, 100, at_ms(0));
  }
  const auto order = h.drain_one_by_one(at_ms(1), 80);
  const auto heavy =
      std::count_if(order.begin(), order.end(), [](uint64_t u) { return u >= 1000; });
  EXPECT_NEAR(static_cast<double>(heavy), 60.0, 1.0);
}

TEST(SchedulerOrder, TenantWeightsCanChangeWhileQueued) {
  Harness h(one_pool({named("c")}, {1}));
  for (uint64_t i = 0; i < 100; ++i) {
    h.add(i, 0, 1, 100, at_ms(0));
    h.add(1000 + i, 0, 2, 100, at_ms(0));
  }
  EXPECT_EQ(h.scheduler().tenant_queue_depth(0, 0, 2), 100u);
  EXPECT_FALSE(h.scheduler().set_tenant_weight(2, 0.0));
  EXPECT_TRUE(h.scheduler().set_tenant_weight(2, 4.0));
  const auto order = h.drain_one_by_one(at_ms(1), 50);
  const auto heavy =
      std::count_if(order.begin(), order.end(), [](uint64_t u) { return u >= 1000; });
  EXPECT_NEAR(static_cast<double>(heavy), 40.0, 1.0);
  const auto depths = h.scheduler().tenant_queue_depths();
  ASSERT_EQ(depths.size(), 2u);
  uint32_t left = 0;
  for (const TenantDepth& d : depths) left += d.queued;
  EXPECT_EQ(left, 150u);
}

TEST(SchedulerOrder, EarliestDeadlineFirstThenArrivalInsideATenant) {
  ClassPolicy c = named("c");
  c.max_queue_wait = 10s;
  Harness h(one_pool({c}, {1}));
  h.add(1, 0, 7, 10, at_ms(0), {}, at_ms(9000));
  h.add(2, 0, 7, 10, at_ms(0), {}, at_ms(3000));
  h.add(3, 0, 7, 10, at_ms(0));  // class deadline: 10 s
  h.add(4, 0, 7, 10, at_ms(0), {}, at_ms(3000));
  h.add(5, 0, 7, 10, at_ms(0), {}, at_ms(20'000));  // the class's 10 s is tighter
  EXPECT_EQ(h.drain_one_by_one(at_ms(1)), (std::vector<uint64_t>{2, 4, 1, 3, 5}));
}

// "big" has 100x the weight; one "small" request with a 1 s deadline waits
// behind a steady stream of big requests, one decision every 100 ms.
struct AgingRun {
  int64_t small_started_ms = -1;  // when the small request was dispatched
  bool small_expired = false;     // whether it was answered 503 instead
};

// own_deadline: the 1 s comes from the request's own deadline (class wait
// 100 s) instead of from its class.
AgingRun run_aging(double aging_fraction, bool own_deadline) {
  ClassPolicy small = named("small");
  small.max_queue_wait = own_deadline ? 100s : 1s;
  ClassPolicy big = named("big");
  big.weight = 100;
  big.max_queue_wait = 100s;
  SchedulerConfig config = one_pool({small, big}, {1});
  config.aging_fraction = aging_fraction;
  Harness h(std::move(config));
  h.add(1, 0, 0, 1000, at_ms(0));  // runs first and makes small's virtual time large
  for (uint64_t i = 0; i < 50; ++i) h.add(100 + i, 1, 0, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
  h.add(2, 0, 0, 1000, at_ms(0), {}, own_deadline ? std::optional(at_ms(1000)) : std::nullopt);
  h.complete(1, at_ms(0));
  AgingRun run;
  uint64_t running = 0;
  for (int64_t t = 0; t <= 1500; t += 100) {
    if (running != 0) h.complete(running, at_ms(t));
    const auto started = h.poll(at_ms(t));
    for (const Expired& e : h.actions().expired) run.small_expired |= e.user == 2;
    running = started.empty() ? 0 : started.front();
    if (running == 2) run.small_started_ms = t;
  }
  return run;
}

TEST(SchedulerOrder, AgingLetsARequestNearItsDeadlineJumpAhead) {
  for (const bool own_deadline : {false, true}) {
    SCOPED_TRACE(own_deadline ? "request deadline" : "class deadline");
    const AgingRun aged = run_aging(0.2, own_deadline);
    EXPECT_EQ(aged.small_started_ms, 800);  // urgent from 1000 - 0.2 * 1000 ms
    EXPECT_FALSE(aged.small_expired);
    const AgingRun unaged = run_aging(0.0, own_deadline);
    EXPECT_EQ(unaged.small_started_ms, -1);
    EXPECT_TRUE(unaged.small_expired);
  }
}

TEST(SchedulerOrder, MaxShareLendsIdleCapacityButNoNewSlotWhileOthersWait) {
  ClassPolicy capped = named("capped");
  capped.max_share = 0.5;
  Harness h(one_pool({capped, named("other")}, {4}));
  for (uint64_t i = 0; i < 10; ++i) h.add(i, 0, 0, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)).size(), 4u);  // nobody else waits: the idle half is lent
  h.add(100, 1, 0, 10, at_ms(1));
  h.add(101, 1, 0, 10, at_ms(1));
  EXPECT_TRUE(h.poll(at_ms(1)).empty());
  // Each freed slot goes to the class under its cap, never back to the lender.
  h.complete(0, at_ms(2));
  EXPECT_EQ(h.poll(at_ms(2)), (std::vector<uint64_t>{100}));
  h.complete(1, at_ms(3));
  EXPECT_EQ(h.poll(at_ms(3)), (std::vector<uint64_t>{101}));
  h.complete(2, at_ms(4));
  EXPECT_EQ(h.poll(at_ms(4)), (std::vector<uint64_t>{4}));  // nothing else waits: lent again
}

TEST(SchedulerOrder, AgingNeverLetsAFloodingTenantJumpTheFairShare) {
  // One slot, one class (1 s queue deadline, urgent in its last 20%). Tenant
  // 1 floods at t=0; tenant 2's requests arrive at 850 ms, when every one of
  // tenant 1's is already urgent. Aging may not serve the flooder by
  // deadline ahead of the fair share: tenant 2 goes next.
  ClassPolicy chat = named("chat");
  chat.max_queue_wait = 1000ms;
  Harness h(one_pool({chat}, {1}));
  for (uint64_t i = 0; i < 50; ++i) h.add(i, 0, 1, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{0}));
  h.add(100, 0, 2, 10, at_ms(850));
  h.add(101, 0, 2, 10, at_ms(850));
  h.complete(0, at_ms(850));
  EXPECT_EQ(h.poll(at_ms(850)), (std::vector<uint64_t>{100}));
  h.complete(100, at_ms(851));
  EXPECT_EQ(h.poll(at_ms(851)), (std::vector<uint64_t>{1}));  // tenants alternate
  h.complete(1, at_ms(852));
  EXPECT_EQ(h.poll(at_ms(852)), (std::vector<uint64_t>{101}));
}

TEST(SchedulerOrder, BackgroundRunsOnlyOnIdleCapacity) {
  ClassPolicy bg = named("bg");
  bg.background = true;
  Harness h(one_pool({named("std"), bg}, {2}));
  for (uint64_t i = 0; i < 3; ++i) h.add(100 + i, 1, 0, 1, at_ms(0));  // cheap background first
  for (uint64_t i = 0; i < 3; ++i) h.add(i, 0, 0, 1000, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{0, 1}));
  h.complete(0, at_ms(1));
  EXPECT_EQ(h.poll(at_ms(1)), (std::vector<uint64_t>{2}));
  h.complete(1, at_ms(2));
  EXPECT_EQ(h.poll(at_ms(2)), (std::vector<uint64_t>{100}));  // nothing else waits
}

}  // namespace
}  // namespace arbiter::sched
