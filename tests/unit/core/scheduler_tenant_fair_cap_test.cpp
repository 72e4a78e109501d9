// The fair-share cap (SchedulerConfig::tenant_fair_cap): a tenant whose
// demand floods its class holds at most that multiple of its weight's share
// (among the class's busy tenants) of the pool's slots; beyond it, it takes
// only slots nobody else can use, and those never count against the limit
// the others are served within, so the others' next requests start at once
// and no slot idles while the flood waits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "scheduler_test_util.hpp"

namespace arbiter::sched::testing {
namespace {

constexpr TenantId kFlooder = 1;
constexpr uint64_t kOthers = 1'000;  // the other tenants' tags start here
constexpr uint32_t kSlots = 20;

struct FairCapRun {
  std::unique_ptr<Harness> harness;
  std::size_t first = 0;   // tenant 1's requests started by the (last) poll
  std::size_t others = 0;  // the other tenants' requests started by it
};

// One class whose queues hold every request, one backend of `slots`.
std::unique_ptr<Harness> harness(double fair_cap, uint32_t slots) {
  ClassPolicy chat = named("chat");
  chat.max_queue = 10'000;
  chat.max_queue_per_tenant = 10'000;
  SchedulerConfig config = one_pool({chat}, {slots});
  config.tenant_fair_cap = fair_cap;
  return std::make_unique<Harness>(std::move(config));
}

// One class, one backend of 20 slots. Tenant 1 queues `first` requests at
// t=0 (the oldest), tenants 2-4 `each` at t=1; one poll at t=2.
FairCapRun run(double fair_cap, uint64_t first, uint64_t each) {
  FairCapRun out{.harness = harness(fair_cap, kSlots)};
  Harness& h = *out.harness;
  for (uint64_t i = 0; i < first; ++i) h.add(i, 0, kFlooder, 100, at_ms(0));
  for (uint64_t t = 0; t < 3; ++t) {
    for (uint64_t i = 0; i < each; ++i) h.add(kOthers + t * 100 + i, 0, static_cast<TenantId>(2 + t), 100, at_ms(1));
  }
  for (const uint64_t tag : h.poll(at_ms(2))) ++(tag < kOthers ? out.first : out.others);
  return out;
}

TEST(SchedulerTenantFairCap, AFloodingTenantTakesOnlyWhatNobodyElseCanUse) {
  // Uncapped, the flood's older requests take every slot the others' six
  // leave, and the next request of another tenant waits for one to end.
  FairCapRun open = run(0, 60, 2);
  EXPECT_EQ(open.first + open.others, kSlots);
  EXPECT_GT(open.first, 10u);
  open.harness->add(kOthers + 900, 0, 9, 100, at_ms(3));
  EXPECT_TRUE(open.harness->poll(at_ms(3)).empty());

  // Four busy tenants of weight 1: a quarter each, twice that of 20 slots
  // is 10. Tenant 1's demand (60 of 66) is beyond the flooding bound: 10
  // within its cap, and the 4 slots the others leave over it.
  FairCapRun capped = run(2, 60, 2);
  Harness& h = *capped.harness;
  EXPECT_EQ(capped.first, 14u);
  EXPECT_EQ(capped.others, 6u);
  EXPECT_EQ(h.scheduler().backend_over_fair_share(0, 0), 4u);
  EXPECT_EQ(h.scheduler().counters().total().over_fair_share, 4u);
  EXPECT_EQ(h.scheduler().waits_for(0, 0), WaitReason::kTenantCap);
  // The excess is one step less urgent for an engine that schedules by
  // priority; everything else carries its class's priority.
  int less_urgent = 0;
  for (const Dispatch& d : h.actions().dispatches) {
    const int base = h.scheduler().config().classes[0].engine_priority;
    EXPECT_TRUE(d.engine_priority == base || d.engine_priority == base + 1);
    less_urgent += d.engine_priority == base + 1;
  }
  EXPECT_EQ(less_urgent, 4);
  // Another tenant's request arriving now starts at once: the flood's
  // excess holds no slot of the limit.
  h.add(kOthers + 900, 0, 9, 100, at_ms(3));
  EXPECT_EQ(h.poll(at_ms(3)), std::vector<uint64_t>{kOthers + 900});
  EXPECT_EQ(h.scheduler().backend_in_flight(0, 0), kSlots + 1);
  // One of the flood's requests ends: the backend still runs 20, none
  // starts; once the other tenant's ends too, one more of the flood's does.
  ASSERT_TRUE(h.complete(0, at_ms(4)));
  EXPECT_TRUE(h.poll(at_ms(4)).empty());
  ASSERT_TRUE(h.complete(kOthers + 900, at_ms(5)));
  const auto next = h.poll(at_ms(5));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_LT(next[0], kOthers);
  EXPECT_EQ(h.scheduler().backend_over_fair_share(0, 0), 5u);
  // Completed as they run, every request is served and every count drains.
  for (int64_t ms = 10; ms < 2'000 && h.scheduler().in_flight() > 0; ms += 10) {
    for (uint64_t u = 0; u < 60; ++u) h.complete(u, at_ms(ms));
    for (uint64_t t = 0; t < 3; ++t) {
      for (uint64_t i = 0; i < 2; ++i) h.complete(kOthers + t * 100 + i, at_ms(ms));
    }
    h.poll(at_ms(ms));
  }
  EXPECT_EQ(h.scheduler().queued(), 0u);
  EXPECT_EQ(h.scheduler().in_flight(), 0u);
  EXPECT_EQ(h.scheduler().backend_over_fair_share(0, 0), 0u);
  EXPECT_EQ(h.scheduler().tenant_queues(), 0u);
  EXPECT_EQ(h.scheduler().counters().total().completed, 67u);
}

TEST(SchedulerTenantFairCap, ATenantAloneIsNotCapped) {
  // Its share among the busy tenants is all of it.
  const FairCapRun alone = run(2, 60, 0);
  EXPECT_EQ(alone.first, kSlots);
  EXPECT_EQ(alone.harness->scheduler().backend_over_fair_share(0, 0), 0u);
}

// 50 slots. Tenant 1 alone queues 26 requests at t=0 (all start: alone, it
// is not capped), tenants 2-4 then 6 each (all start, 6 slots stay free),
// then tenant 1 queues `more`. Its cap is 2 x 1/4 x 50 = 25 and it holds
// 26: whether the `more` count against the limit depends on its demand.
FairCapRun more_started(double fair_cap, uint64_t more) {
  FairCapRun out{.harness = harness(fair_cap, 50)};
  Harness& h = *out.harness;
  for (uint64_t i = 0; i < 26; ++i) h.add(i, 0, kFlooder, 100, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)).size(), 26u);
  for (uint64_t t = 0; t < 3; ++t) {
    for (uint64_t i = 0; i < 6; ++i) h.add(kOthers + t * 100 + i, 0, static_cast<TenantId>(2 + t), 100, at_ms(1));
  }
  EXPECT_EQ(h.poll(at_ms(1)).size(), 18u);
  for (uint64_t i = 0; i < more; ++i) h.add(100 + i, 0, kFlooder, 100, at_ms(2));
  out.first = h.poll(at_ms(2)).size();
  // Then another tenant's request: started beside them only if theirs are over the cap.
  h.add(kOthers + 900, 0, 9, 100, at_ms(3));
  out.others = h.poll(at_ms(3)).size();
  return out;
}

TEST(SchedulerTenantFairCap, OnlyAFloodingDemandIsCapped) {
  // 30 of the class's 48 requests (62.5%) is not beyond the flooding bound,
  // (1 + 1/4) / 2 of it: tenant 1 goes past its cap within the limit, and
  // the next request of another tenant takes the last slot.
  const FairCapRun within = more_started(2, 4);
  EXPECT_EQ(within.first, 4u);
  EXPECT_EQ(within.others, 1u);
  EXPECT_EQ(within.harness->scheduler().backend_over_fair_share(0, 0), 0u);
  // 38 of 56 (68%) is: the 6 free slots take 6 of them all the same, as
  // excess, and the other tenant's request starts beside them.
  const FairCapRun flooding = more_started(2, 12);
  EXPECT_EQ(flooding.first, 6u);
  EXPECT_EQ(flooding.others, 1u);
  EXPECT_EQ(flooding.harness->scheduler().backend_over_fair_share(0, 0), 6u);
  EXPECT_EQ(flooding.harness->scheduler().waits_for(0, 0), WaitReason::kTenantCap);
  // Without the cap they hold the limit's slots: it waits.
  const FairCapRun open = more_started(0, 12);
  EXPECT_EQ(open.first, 6u);
  EXPECT_EQ(open.others, 0u);
}

TEST(SchedulerTenantFairCap, TheCapIsAtLeastOneSlot) {
  // A multiple of 0.01 of a quarter of 20 slots is 0.05: one slot within
  // the limit, the 13 the others leave as excess.
  const FairCapRun run_ = run(0.01, 60, 2);
  EXPECT_EQ(run_.first, 14u);
  EXPECT_EQ(run_.harness->scheduler().backend_over_fair_share(0, 0), 13u);
}

// A cap the operator set (tenants[].max_running) is a limit, not a share:
// nothing over it starts, also on idle slots.
TEST(SchedulerTenantFairCap, AnOperatorsCapIsNotLentIdleSlots) {
  ClassPolicy chat = named("chat");
  chat.max_queue = 10'000;
  chat.max_queue_per_tenant = 10'000;
  SchedulerConfig config = one_pool({chat}, {kSlots});
  config.tenant_fair_cap = 2;
  config.tenant_max_running = {{kFlooder, 3}};
  Harness h(std::move(config));
  for (uint64_t i = 0; i < 60; ++i) h.add(i, 0, kFlooder, 100, at_ms(0));
  h.add(kOthers, 0, 2, 100, at_ms(1));
  EXPECT_EQ(h.poll(at_ms(2)).size(), 4u);
  EXPECT_EQ(h.scheduler().backend_over_fair_share(0, 0), 0u);
  EXPECT_EQ(h.scheduler().waits_for(0, 0), WaitReason::kTenantCap);
}

TEST(SchedulerTenantFairCap, ConfigOutsideItsRangeIsRefused) {
  SchedulerConfig config = one_pool({named("chat")}, {4});
  config.tenant_fair_cap = -1;
  EXPECT_TRUE(validate(config).has_value());
  config.tenant_fair_cap = 101;
  EXPECT_TRUE(validate(config).has_value());
  config.tenant_fair_cap = 2;
  EXPECT_FALSE(validate(config).has_value());
}

}  // namespace
}  // namespace arbiter::sched::testing
