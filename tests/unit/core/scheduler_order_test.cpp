// Dispatch order of the three policies: fifo, strict priority, hybrid
// (guarantees, weighted tokens, tenant fairness, EDF, aging, caps).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <numeric>

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

TEST(SchedulerOrder, HybridServesTheTopPriorityFirstAndSharesByWeightBelowIt) {
  // b has the better priority: served first, as under the priority policy.
  EXPECT_EQ(interleaved_order(Policy::kHybrid),
            (std::vector<uint64_t>{20, 21, 22, 23, 10, 11, 12, 13}));
  // Below a top class, a and b share one priority: by weight in tokens
  // (a pays 10 per request, b 10/3; ties go to class order).
  ClassPolicy top = named("top");
  top.engine_priority = -1;
  ClassPolicy a = named("a");
  ClassPolicy b = named("b");
  b.weight = 3;
  Harness h(one_pool({top, a, b}, {1}));
  h.add(1, 0, 0, 10, at_ms(0));
  h.add(2, 0, 0, 10, at_ms(0));
  for (uint64_t i = 0; i < 4; ++i) {
    h.add(10 + i, 1, 0, 10, at_ms(0));
    h.add(20 + i, 2, 0, 10, at_ms(0));
  }
  EXPECT_EQ(h.drain_one_by_one(at_ms(1)),
            (std::vector<uint64_t>{1, 2, 10, 20, 21, 22, 11, 23, 12, 13}));
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

// "hi" always has work, "lo" has a guaranteed quarter of the pool; both of
// one priority (`hi_priority` 0: "hi" is a higher priority than "lo"); the
// priority policy breaks the tie by class order. Four slots; 40 decisions.
int low_class_dispatches(Policy policy, int hi_priority = 1) {
  ClassPolicy hi = named("hi");
  hi.weight = 3;
  hi.engine_priority = hi_priority;
  ClassPolicy lo = named("lo");
  lo.engine_priority = 1;
  lo.min_share = 0.25;
  Harness h(one_pool({hi, lo}, {4}, policy));
  for (uint64_t i = 0; i < 20; ++i) h.add(1000 + i, 1, 0, 100, at_ms(0));
  uint64_t next_hi = 0;
  for (int i = 0; i < 8; ++i) h.add(next_hi++, 0, 0, 100, at_ms(0));
  std::deque<uint64_t> running;
  for (uint64_t user : h.poll(at_ms(0))) running.push_back(user);
  int low = 0;
  for (int step = 1; step <= 40; ++step) {
    h.complete(running.front(), at_ms(step));  // the oldest run ends
    running.pop_front();
    h.add(next_hi++, 0, 0, 100, at_ms(step));  // hi never runs dry
    const auto started = h.poll(at_ms(step));
    EXPECT_EQ(started.size(), 1u);
    if (started.front() >= 1000) ++low;
    running.push_back(started.front());
  }
  return low;
}

TEST(SchedulerOrder, PriorityStarvesTheLowClassHybridServesItsGuarantee) {
  EXPECT_EQ(low_class_dispatches(Policy::kPriority), 0);
  const int hybrid = low_class_dispatches(Policy::kHybrid);
  EXPECT_GE(hybrid, 9);  // one slot of four: a quarter of 40
  EXPECT_LE(hybrid, 11);
  // A guarantee holds against classes of the same or a lower priority: a
  // higher priority in use still goes first.
  EXPECT_EQ(low_class_dispatches(Policy::kHybrid, 0), 0);
}

// Tenant 1 queues 100 requests first, then `others` tenants queue 10 each;
// one slot, each request runs 20 ms. How many of the first 40 dispatches
// tenant 1 gets.
std::ptrdiff_t flooder_of_first_40(Policy policy, uint32_t others) {
  ClassPolicy c = named("c");
  c.max_queue_wait = 100s;
  Harness h(one_pool({c}, {1}, policy));
  for (uint64_t i = 0; i < 100; ++i) h.add(i, 0, 1, 100, at_ms(0));
  for (uint32_t t = 0; t < others; ++t) {
    for (uint64_t i = 0; i < 10; ++i) h.add(1000 + 100 * t + i, 0, 2 + t, 100, at_ms(1));
  }
  std::vector<uint64_t> order;
  for (int64_t t = 2;; t += 20) {
    const auto started = h.poll(at_ms(t));
    if (started.empty()) break;
    order.push_back(started.front());
    h.complete(started.front(), at_ms(t + 20));
  }
  EXPECT_EQ(order.size(), 100u + 10 * others);
  return std::count_if(order.begin(), order.begin() + 40, [](uint64_t u) { return u < 1000; });
}

TEST(SchedulerOrder, AFloodingTenantIsHeldToItsShareWhileOthersWait) {
  // Under fifo the others wait behind all 100. Hybrid serves in arrival order
  // only while a tenant is within its share: with one other tenant the
  // flooder gets at most 75% of the slot (halfway from its half to all of
  // it), with three others at most 2x its quarter, while they have work.
  EXPECT_EQ(flooder_of_first_40(Policy::kFifo, 1), 40);
  EXPECT_LE(flooder_of_first_40(Policy::kHybrid, 1), 31);
  EXPECT_EQ(flooder_of_first_40(Policy::kFifo, 3), 40);
  EXPECT_LE(flooder_of_first_40(Policy::kHybrid, 3), 21);
}

TEST(SchedulerOrder, ARateFromOtherReplicasThatIsNotFiniteIsNoFigure) {
  // Figures come through Redis from other processes. An infinite rate for
  // some tenant made the class's service elsewhere infinite, so every
  // tenant's share of it read 0: nobody was over its share, and a flooder
  // here went in arrival order.
  ClassPolicy c = named("c");
  c.max_queue_wait = 100s;
  Harness h(one_pool({c}, {1}));
  h.scheduler().set_remote_service(
      {{.pool = 0, .klass = 0, .tenant = 9, .per_second = std::numeric_limits<double>::infinity()}}, 500ms);
  for (uint64_t i = 0; i < 100; ++i) h.add(i, 0, 1, 100, at_ms(0));
  for (uint64_t i = 0; i < 10; ++i) h.add(1000 + i, 0, 2, 100, at_ms(1));
  std::vector<uint64_t> order;
  for (int64_t t = 2; order.size() < 40; t += 20) {
    const auto started = h.poll(at_ms(t));
    ASSERT_EQ(started.size(), 1u);
    order.push_back(started.front());
    h.complete(started.front(), at_ms(t + 20));
  }
  EXPECT_LE(std::count_if(order.begin(), order.end(), [](uint64_t u) { return u < 1000; }), 31);
}

TEST(SchedulerOrder, TenantsWithinTheirShareAreServedInArrivalOrder) {
  // Two tenants alternating, equal demand: nobody is over its share, so the
  // service order is the arrival order (strict fair queueing would reorder
  // them by virtual time and cost the busier one its SLOs for nothing).
  Harness h(one_pool({named("c")}, {1}));
  for (uint64_t i = 0; i < 10; ++i) h.add(i, 0, 1 + (i % 2), i % 3 == 0 ? 300 : 100, at_ms(0));
  std::vector<uint64_t> expected(10);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(h.drain_one_by_one(at_ms(1)), expected);
}

// Tenant 1 queues 100 first, tenant 2 (weight `heavy_weight`) 100 after;
// how many of the first `decisions` dispatches go to tenant 2.
int64_t heavy_share(double heavy_weight, std::size_t decisions) {
  SchedulerConfig config = one_pool({named("c")}, {1});
  if (heavy_weight != 1) config.tenant_weights = {{2, heavy_weight}};
  Harness h(std::move(config));
  for (uint64_t i = 0; i < 100; ++i) h.add(i, 0, 1, 100, at_ms(0));
  for (uint64_t i = 0; i < 100; ++i) h.add(1000 + i, 0, 2, 100, at_ms(0));
  const auto order = h.drain_one_by_one(at_ms(1), decisions);
  return std::count_if(order.begin(), order.end(), [](uint64_t u) { return u >= 1000; });
}

TEST(SchedulerOrder, TenantWeightsBoundWhatATenantMayTakeOutOfTurn) {
  // Tenant 1 arrived first. Equal weights: it may take 75% before tenant 2
  // is served out of turn; tenant 2 at weight 3 (tenant 1's share is a
  // quarter): tenant 1 may take only 50%.
  EXPECT_NEAR(static_cast<double>(heavy_share(1.0, 80)), 20.0, 1.0);
  EXPECT_NEAR(static_cast<double>(heavy_share(3.0, 80)), 40.0, 1.0);
}

TEST(SchedulerOrder, ATenantServedByOtherReplicasWaitsForTheOthersHere) {
  // Two tenants alternating: within their shares here, so arrival order.
  // When the other replicas (in front of the same engines) report serving
  // tenant 1 at 10,000 tokens a second over the last half second, tenant 1
  // has had 5,000 tokens of service the others have not: fair queueing
  // serves tenant 2 first here, and the tenant rule no longer lets tenant
  // 1 go in arrival order.
  auto order = [](bool shared) {
    Harness h(one_pool({named("c")}, {1}));
    for (uint64_t i = 0; i < 10; ++i) h.add(i, 0, 1 + (i % 2), 100, at_ms(0));
    if (shared) {
      h.scheduler().set_remote_service({{.pool = 0, .klass = 0, .tenant = 1, .per_second = 10'000}}, 500ms);
    }
    return h.drain_one_by_one(at_ms(1));
  };
  EXPECT_EQ(order(false), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(order(true), (std::vector<uint64_t>{1, 3, 5, 7, 9, 0, 2, 4, 6, 8}));
}

TEST(SchedulerOrder, ATenantServedByOtherReplicasIsKnownHereFromItsFirstRequest) {
  // The same, but the exchange comes before either tenant has work here
  // (the flooder's first request on this replica): its rate is kept for
  // when its queue is made. It was dropped, so until the next exchange
  // (half a second) the flooder went in arrival order.
  Harness h(one_pool({named("c")}, {1}));
  h.scheduler().set_remote_service({{.pool = 0, .klass = 0, .tenant = 1, .per_second = 10'000}}, 500ms);
  for (uint64_t i = 0; i < 10; ++i) h.add(i, 0, 1 + (i % 2), 100, at_ms(0));
  EXPECT_EQ(h.drain_one_by_one(at_ms(1)), (std::vector<uint64_t>{1, 3, 5, 7, 9, 0, 2, 4, 6, 8}));
  // The next exchange replaces the rates: without tenant 1 in it, a new
  // queue of tenant 1 starts clean.
  h.scheduler().set_remote_service({}, 500ms);
  for (uint64_t i = 10; i < 14; ++i) h.add(i, 0, 1 + (i % 2), 100, at_ms(2000));
  EXPECT_EQ(h.drain_one_by_one(at_ms(2001)), (std::vector<uint64_t>{10, 11, 12, 13}));
}

TEST(SchedulerOrder, LocalServiceIsThisReplicasOwnNeverTheOthers) {
  Harness h(one_pool({named("c")}, {2}));
  h.add(1, 0, 7, 500, at_ms(0));
  h.add(2, 0, 8, 300, at_ms(0));
  h.add(3, 0, 8, 300, at_ms(0));  // keeps tenant 8's queue alive after its first ends
  ASSERT_EQ(h.poll(at_ms(1)).size(), 2u);
  // What the others report is not passed back to them.
  h.scheduler().set_remote_service({{.pool = 0, .klass = 0, .tenant = 8, .per_second = 1e6}}, 500ms);
  const auto rates = h.scheduler().local_service(at_ms(100));
  ASSERT_EQ(rates.size(), 2u);
  for (const ServiceRate& r : rates) {
    EXPECT_TRUE(r.tenant == 7 || r.tenant == 8);
    EXPECT_GT(r.per_second, 0);
    EXPECT_LT(r.per_second, 1e4);
  }
  // Tenant 7's request ends and it has nothing left: its queue goes, and
  // so does its line.
  h.complete(1, at_ms(200));
  const auto after = h.scheduler().local_service(at_ms(300));
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].tenant, 8u);
}

TEST(SchedulerOrder, TenantWeightsCanChangeWhileQueued) {
  Harness h(one_pool({named("c")}, {1}));
  for (uint64_t i = 0; i < 100; ++i) h.add(i, 0, 1, 100, at_ms(0));
  for (uint64_t i = 0; i < 100; ++i) h.add(1000 + i, 0, 2, 100, at_ms(0));
  EXPECT_EQ(h.scheduler().tenant_queue_depth(0, 0, 2), 100u);
  EXPECT_FALSE(h.scheduler().set_tenant_weight(2, 0.0));
  EXPECT_TRUE(h.scheduler().set_tenant_weight(2, 4.0));
  // Tenant 1's share is now a fifth: it may take 40% out of turn, not 75%.
  const auto order = h.drain_one_by_one(at_ms(1), 50);
  const auto heavy =
      std::count_if(order.begin(), order.end(), [](uint64_t u) { return u >= 1000; });
  EXPECT_NEAR(static_cast<double>(heavy), 30.0, 1.0);
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
  // deadline ahead of its share: tenant 2 goes next.
  ClassPolicy chat = named("chat");
  chat.max_queue_wait = 1000ms;
  Harness h(one_pool({chat}, {1}));
  for (uint64_t i = 0; i < 50; ++i) h.add(i, 0, 1, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{0}));
  h.add(100, 0, 2, 10, at_ms(850));
  h.add(101, 0, 2, 10, at_ms(850));
  h.complete(0, at_ms(850));
  // Tenant 1 holds all of the class's recent service: it is over its share,
  // and aging does not serve its urgent requests ahead of tenant 2's.
  EXPECT_EQ(h.poll(at_ms(850)), (std::vector<uint64_t>{100}));
  h.complete(100, at_ms(851));
  // With two tenants, tenant 1 may take 75% in arrival order: tenant 2's
  // second request is among the next four, not behind tenant 1's 48.
  const auto next = h.drain_one_by_one(at_ms(852), 4);
  EXPECT_NE(std::find(next.begin(), next.end(), 101), next.end());
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
