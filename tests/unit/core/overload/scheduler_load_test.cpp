// What the load coefficient reads of the scheduler (core/overload/scheduler_load.hpp),
// the same for the gateway and arbiter-bench: a backend's slots, this
// gateway's requests running there with background work apart, and its
// share of the pool's non-background queue.
#include "core/overload/scheduler_load.hpp"

#include <gtest/gtest.h>

#include "../scheduler_test_util.hpp"

namespace arbiter::sched::testing {
namespace {

TEST(SchedulerLoad, ABackendsViewCountsItsSlotsItsRequestsAndItsShareOfTheQueue) {
  // Two backends of 2 and 6 slots; 8 chat requests fill them, 4 more and 3
  // batch requests wait.
  Harness h(one_pool({named("chat"), patient("batch", true)}, {2, 6}));
  for (uint64_t u = 0; u < 12; ++u) h.add(u, 0, 1, 100, at_ms(0));
  for (uint64_t u = 100; u < 103; ++u) h.add(u, 1, 2, 100, at_ms(0));
  h.poll(at_ms(1));
  const overload::BackendView small = overload::scheduler_view(h.scheduler(), 0, 0, at_ms(2));
  const overload::BackendView large = overload::scheduler_view(h.scheduler(), 0, 1, at_ms(2));
  EXPECT_EQ(small.slots, 2u);
  EXPECT_EQ(large.slots, 6u);
  EXPECT_EQ(small.own_running + large.own_running, 8u);
  EXPECT_EQ(small.own_background + large.own_background, 0u);
  // The waiting chat requests split by slots (batch work is not counted).
  EXPECT_DOUBLE_EQ(small.queued, 4.0 * 2 / 8);
  EXPECT_DOUBLE_EQ(large.queued, 4.0 * 6 / 8);
  EXPECT_FALSE(small.fresh);  // the engine's part is the caller's
}

}  // namespace
}  // namespace arbiter::sched::testing
