// Tenant headroom (SchedulerConfig::tenant_headroom): a tenant flooding its
// class yields to the tenants that do not flood, and leaves the pool's last
// slots to them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "scheduler_test_util.hpp"

namespace arbiter::sched::testing::scheduler_tenant_headroom_test {
namespace {

using namespace std::chrono_literals;

constexpr TenantId kFlooder = 1;
constexpr uint64_t kVictimTag = 1'000'000;  // victims' tags start here

struct FloodRun {
  uint64_t victims = 0;        // victim requests dispatched
  uint64_t passed_over = 0;    // of them, dispatched after a flooder request enqueued later
  uint64_t flooder_first = 0;  // flooder dispatches while a victim request was queued
  uint32_t least_free = 20;    // fewest free slots a flooder request started in, victims busy
};

// One class, one backend of 20 slots. The flooder keeps a backlog queued
// from t=1 ms (its oldest are older than any later victim's request), each
// request 100 tokens, 20 ms. Nine victims each send one request every
// 100 ms, 300 tokens, 90 ms: they hold about 8 slots and a third of the
// class's service, so the flooder has about two thirds: within the 75%
// that arrival order allows a tenant while only it and one other have work
// queued, far over 3x its tenth among the ten tenants with work.
FloodRun run_flood(double tenant_headroom) {
  constexpr uint32_t kSlots = 20;
  ClassPolicy chat = named("chat");
  chat.max_queue_wait = 100s;
  chat.max_queue = 100'000;
  chat.max_queue_per_tenant = 10'000;
  SchedulerConfig config = one_pool({chat}, {kSlots});
  config.tenant_headroom = tenant_headroom;
  config.tenant_fair_cap = 0;  // the headroom alone (the fair-share cap has its own tests)
  Harness h(std::move(config));

  FloodRun run;
  std::multimap<int64_t, uint64_t> ends;  // completion time -> tag
  std::map<uint64_t, int64_t> queued;     // victim tag -> flooder dispatches seen while it waited
  uint32_t running = 0, victims_running = 0;
  uint64_t next_flood = 0;
  for (int64_t ms = 0; ms < 2'000; ++ms) {
    for (auto it = ends.begin(); it != ends.end() && it->first <= ms; it = ends.erase(it)) {
      h.complete(it->second, at_ms(ms));
      --running;
      if (it->second >= kVictimTag) --victims_running;
    }
    while (ms > 0 && next_flood < 100 + static_cast<uint64_t>(ms)) {
      h.add(next_flood++, 0, kFlooder, 100, at_ms(ms));
    }
    for (uint64_t v = 0; v < 9; ++v) {
      if ((ms - 11 * static_cast<int64_t>(v)) % 100 != 0) continue;
      const uint64_t tag = kVictimTag + static_cast<uint64_t>(ms) * 10 + v;
      h.add(tag, 0, static_cast<TenantId>(2 + v), 300, at_ms(ms));
      queued[tag] = 0;
    }
    for (const uint64_t tag : h.poll(at_ms(ms))) {
      const bool victim = tag >= kVictimTag;
      if (!victim && (victims_running > 0 || !queued.empty())) {
        run.least_free = std::min(run.least_free, kSlots - running);
      }
      ++running;
      ends.emplace(ms + (victim ? 90 : 20), tag);
      if (victim) {
        ++victims_running;
        ++run.victims;
        run.passed_over += queued[tag] > 0;
        queued.erase(tag);
      } else {
        run.flooder_first += !queued.empty();
        for (auto& [waiting, seen] : queued) ++seen;
      }
    }
  }
  return run;
}

TEST(SchedulerTenantHeadroom, WithoutItAFloodersOlderRequestsGoFirst) {
  // The measure below does see the flooder go first: its share of the
  // class's service is under the 75% arrival order allows while it and one
  // other tenant have work queued, and it takes the last free slot.
  const FloodRun off = run_flood(0);
  EXPECT_GT(off.victims, 150u);
  EXPECT_GT(off.passed_over, 20u);
  EXPECT_GT(off.flooder_first, 20u);
  EXPECT_EQ(off.least_free, 1u);
}

TEST(SchedulerTenantHeadroom, AFloodingTenantYieldsAndLeavesTheLastSlots) {
  // With a tenth of the slots kept (2): the flooder, its share counted
  // among every tenant with work queued or running (not only those
  // queued), never goes ahead of a waiting victim and never starts a
  // request in the last two free slots while victims have work.
  const FloodRun on = run_flood(0.1);
  EXPECT_GT(on.victims, 150u);
  EXPECT_EQ(on.passed_over, 0u);
  EXPECT_EQ(on.flooder_first, 0u);
  EXPECT_GE(on.least_free, 3u);
}

TEST(SchedulerTenantHeadroom, ATenantAloneTakesEverySlot) {
  // Headroom is for other tenants with work: a tenant alone in its class is
  // never flooding, so it fills the pool (the rule costs nothing idle).
  SchedulerConfig config = one_pool({named("chat")}, {4, 4});
  config.tenant_headroom = 0.5;
  Harness h(std::move(config));
  for (uint64_t i = 0; i < 20; ++i) h.add(i, 0, kFlooder, 100, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)).size(), 8u);
  // Still alone after serving: its own history does not make it flood.
  for (uint64_t i = 0; i < 8; ++i) h.complete(i, at_ms(10));
  EXPECT_EQ(h.poll(at_ms(10)).size(), 8u);
}

TEST(SchedulerTenantHeadroom, TheHeadroomIsRoundedUpAndValidated) {
  // 4 slots, 0.1 of them: one slot kept. Tenant 2 has a small request
  // running. The flooder's first request is within its share (it had no
  // service yet); after it, the flooder has had 100 of the class's 110
  // tokens, over 75% (halfway from its half among the two busy tenants to
  // all): it floods, takes one more slot and leaves the last.
  SchedulerConfig config = one_pool({named("chat")}, {4});
  config.tenant_headroom = 0.1;
  Harness h(std::move(config));
  h.add(500, 0, 2, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{500}));
  for (uint64_t i = 0; i < 20; ++i) h.add(i, 0, kFlooder, 100, at_ms(1));
  EXPECT_EQ(h.poll(at_ms(1)), (std::vector<uint64_t>{0, 1}));
  // Tenant 2's next request starts at once in the slot kept.
  h.add(501, 0, 2, 10, at_ms(2));
  EXPECT_EQ(h.poll(at_ms(2)), (std::vector<uint64_t>{501}));
  // When tenant 2 has nothing left, the flooder is alone: every slot is its.
  h.complete(500, at_ms(3));
  h.complete(501, at_ms(3));
  EXPECT_EQ(h.poll(at_ms(3)), (std::vector<uint64_t>{2, 3}));

  SchedulerConfig bad = one_pool({named("chat")}, {4});
  bad.tenant_headroom = 0.6;
  EXPECT_FALSE(Scheduler::create(std::move(bad)).has_value());
}

}  // namespace
}  // namespace arbiter::sched::testing::scheduler_tenant_headroom_test
