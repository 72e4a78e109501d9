// Scheduler::set_class_paused: a degradation stage stops new dispatch of a
// class on a pool; its running work finishes, its queued work waits (and
// says why) and starts again once the class is resumed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "scheduler_test_util.hpp"

namespace arbiter::sched::testing {
namespace {

bool has(const std::vector<uint64_t>& started, uint64_t user) {
  return std::find(started.begin(), started.end(), user) != started.end();
}

TEST(SchedulerPause, APausedClassStartsNothingNewWhileOthersStillDo) {
  Harness h(one_pool({named("chat"), patient("batch", true)}, {4}));
  h.add(1, 1, 1, 100, at_ms(0));
  ASSERT_TRUE(has(h.poll(at_ms(1)), 1));  // running before the pause: it keeps its slot

  EXPECT_TRUE(h.scheduler().set_class_paused(0, 1, true));
  EXPECT_FALSE(h.scheduler().set_class_paused(0, 1, true));  // no change
  EXPECT_TRUE(h.scheduler().class_paused(0, 1));
  for (uint64_t u = 2; u < 5; ++u) h.add(u, 1, 1, 100, at_ms(2));
  h.add(10, 0, 2, 100, at_ms(3));
  const auto started = h.poll(at_ms(4));
  // Free slots and nobody else waiting: without the pause batch would take them.
  EXPECT_EQ(started, std::vector<uint64_t>{10});
  EXPECT_EQ(h.scheduler().waits_for(0, 1), WaitReason::kPaused);
  EXPECT_EQ(h.scheduler().backend_in_flight(0, 0), 2u);

  EXPECT_TRUE(h.scheduler().set_class_paused(0, 1, false));
  const auto resumed = h.poll(at_ms(5));
  EXPECT_EQ(resumed.size(), 2u);  // the two free slots
  EXPECT_EQ(h.scheduler().backend_in_flight(0, 0), 4u);
}

TEST(SchedulerPause, APausedNonBackgroundClassTakesNoLeftoverSlot) {
  // The leftover step lends idle slots to classes at their max_share: a
  // pause holds there too.
  ClassPolicy capped = named("chat");
  capped.max_share = 0.25;
  Harness h(one_pool({capped, named("other")}, {4}));
  ASSERT_TRUE(h.scheduler().set_class_paused(0, 0, true));
  for (uint64_t u = 1; u < 4; ++u) h.add(u, 0, 1, 100, at_ms(0));
  EXPECT_TRUE(h.poll(at_ms(1)).empty());
  EXPECT_EQ(h.scheduler().waits_for(0, 0), WaitReason::kPaused);
}

TEST(SchedulerPause, UnknownPoolOrClassIsRefused) {
  Harness h(one_pool({named("chat")}, {1}));
  EXPECT_FALSE(h.scheduler().set_class_paused(1, 0, true));
  EXPECT_FALSE(h.scheduler().set_class_paused(0, 3, true));
  EXPECT_FALSE(h.scheduler().class_paused(0, 3));
}

}  // namespace
}  // namespace arbiter::sched::testing
