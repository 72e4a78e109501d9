// Per-tenant caps (SchedulerConfig::tenant_max_running, tenant_max_share): a
// tenant's requests hold at most that many slots (or that share of the
// pool's capacity) of a pool, all classes together; the rest wait while the
// other tenants' work is served.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "scheduler_test_util.hpp"

namespace arbiter::sched::testing {
namespace {

using namespace std::chrono_literals;

constexpr TenantId kCapped = 1;
constexpr TenantId kOther = 2;

// Classes a and b, one backend of 8 slots. The capped tenant queues 5
// requests in each class first (tags 0-9, the oldest), the other tenant 3
// in class a (tags 100-102); one poll.
struct CapRun {
  std::unique_ptr<Harness> harness;
  std::size_t capped_started = 0;  // of the capped tenant's requests
};

CapRun run_capped(uint32_t cap, double share = 0) {
  SchedulerConfig config = one_pool({named("a"), named("b")}, {8});
  if (cap > 0) config.tenant_max_running = {{kCapped, cap}};
  if (share > 0) config.tenant_max_share = {{kCapped, share}};
  CapRun run{.harness = std::make_unique<Harness>(std::move(config))};
  Harness& h = *run.harness;
  for (uint64_t i = 0; i < 10; ++i) h.add(i, i < 5 ? 0 : 1, kCapped, 100, at_ms(0));
  for (uint64_t i = 0; i < 3; ++i) h.add(100 + i, 0, kOther, 100, at_ms(1));
  const auto started = h.poll(at_ms(2));
  run.capped_started =
      static_cast<std::size_t>(std::count_if(started.begin(), started.end(), [](uint64_t u) { return u < 100; }));
  return run;
}

TEST(SchedulerTenantCap, WithoutACapTheOlderRequestsFillThePool) {
  // The measure below sees a difference: uncapped, the tenant's ten older
  // requests take all the slots but the one the tenant rule gives the
  // other tenant.
  EXPECT_EQ(run_capped(0).capped_started, 7u);
}

TEST(SchedulerTenantCap, ACappedTenantHoldsAtMostItsSlotsAcrossClasses) {
  CapRun run = run_capped(3);
  Harness& h = *run.harness;
  EXPECT_EQ(run.capped_started, 3u);
  // The other tenant's three started beside them; 2 slots stay free, and
  // both classes say why their work waits.
  EXPECT_EQ(h.scheduler().backend_in_flight(0, 0), 6u);
  EXPECT_EQ(h.scheduler().waits_for(0, 0), WaitReason::kTenantCap);
  EXPECT_EQ(h.scheduler().waits_for(0, 1), WaitReason::kTenantCap);
  // One of its requests ends: exactly one more of its requests starts.
  bool ended = false;
  for (uint64_t u = 0; u < 10 && !ended; ++u) ended = h.complete(u, at_ms(10));
  ASSERT_TRUE(ended);
  const auto next = h.poll(at_ms(10));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_LT(next[0], 10u);
  EXPECT_EQ(h.scheduler().backend_in_flight(0, 0), 6u);
  // Completed as they run, every request is served and every count drains.
  for (int64_t t = 20; t < 1'000 && h.scheduler().in_flight() > 0; t += 10) {
    for (uint64_t u = 0; u < 103; ++u) {
      if (u < 10 || u >= 100) h.complete(u, at_ms(t));
    }
    EXPECT_LE(h.poll(at_ms(t)).size(), 3u);
  }
  EXPECT_EQ(h.scheduler().queued(), 0u);
  EXPECT_EQ(h.scheduler().in_flight(), 0u);
  EXPECT_EQ(h.scheduler().tenant_queues(), 0u);
  EXPECT_EQ(h.scheduler().counters().total().completed, 13u);
}

TEST(SchedulerTenantCap, AShareCapIsSlotsOfTheCapacityAndTheLowerCapHolds) {
  EXPECT_EQ(run_capped(0, 0.375).capped_started, 3u);  // 3 of 8 slots
  EXPECT_EQ(run_capped(0, 0.3).capped_started, 2u);    // 2.4 slots: 2
  EXPECT_EQ(run_capped(0, 0.01).capped_started, 1u);   // never below one slot
  EXPECT_EQ(run_capped(5, 0.25).capped_started, 2u);   // the lower of 5 and 2
  EXPECT_EQ(run_capped(2, 0.75).capped_started, 2u);   // the lower of 2 and 6
}

TEST(SchedulerTenantCap, AShareCapFollowsTheCapacity) {
  // Half of two 4-slot backends is 4 slots; with one backend down, 2.
  SchedulerConfig config = one_pool({named("a")}, {4, 4});
  config.tenant_max_share = {{kCapped, 0.5}};
  Harness h(std::move(config));
  for (uint64_t i = 0; i < 8; ++i) h.add(i, 0, kCapped, 100, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)).size(), 4u);
  h.scheduler().set_backend_state(0, 1, BackendSignal{.down = true});
  for (uint64_t u = 0; u < 8; ++u) h.complete(u, at_ms(10));
  const auto next = h.poll(at_ms(10));
  EXPECT_EQ(next.size(), 2u);
  EXPECT_EQ(h.scheduler().waits_for(0, 0), WaitReason::kTenantCap);
}

TEST(SchedulerTenantCap, AShareCapOutsideZeroToOneIsRefused) {
  for (const double share : {0.0, -0.5, 1.5}) {
    SchedulerConfig config = one_pool({named("a")}, {4});
    config.tenant_max_share = {{kCapped, share}};
    ASSERT_TRUE(validate(config).has_value()) << share;
    EXPECT_NE(validate(config)->find("max_share"), std::string::npos);
  }
}

TEST(SchedulerTenantCap, WorkAtItsCapPreemptsNothing) {
  // Tenant 1 (cap 1) has a chat request running and two waiting; tenant
  // 2's background work holds the other 3 slots. A class waiting while
  // background runs preempts it, but not for work that could not start.
  ClassPolicy chat = named("chat");
  ClassPolicy bg = named("bg");
  bg.background = true;
  bg.preemptible = true;
  bg.engine_priority = 10;
  SchedulerConfig config = one_pool({chat, bg}, {4});
  config.tenant_max_running = {{kCapped, 1}};
  Harness h(std::move(config));
  h.add(0, 0, kCapped, 100, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)).size(), 1u);
  for (uint64_t i = 0; i < 3; ++i) h.add(10 + i, 1, kOther, 100, at_ms(1));
  ASSERT_EQ(h.poll(at_ms(1)).size(), 3u);
  h.add(1, 0, kCapped, 100, at_ms(2));
  h.add(2, 0, kCapped, 100, at_ms(2));
  EXPECT_TRUE(h.poll(at_ms(2000)).empty());
  EXPECT_TRUE(h.actions().preemptions.empty());
  // Another tenant's chat request does preempt the background work.
  h.add(3, 0, kOther, 100, at_ms(2001));
  h.poll(at_ms(2001));
  EXPECT_EQ(h.actions().preemptions.size(), 1u);
}

}  // namespace
}  // namespace arbiter::sched::testing
