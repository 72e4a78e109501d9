// What adaptive capacity reads of the scheduler (core/capacity_view.hpp):
// a backend's occupancy (its slots in use, background and other work
// queued or running on its pool) and a pool's gap target (the tightest
// per-token bound of the non-background classes with work on it).
#include "core/capacity_view.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using testing::at_ms;
using testing::Harness;

constexpr ClassId kChat = 0;
constexpr ClassId kBatch = 1;

// chat, then batch (background); both wait as long as a test takes.
SchedulerConfig two_classes(uint32_t slots, Duration chat_tpot = Duration::zero(),
                            Duration batch_tpot = Duration::zero()) {
  std::vector<ClassPolicy> classes(2);
  classes[kChat].name = "chat";
  classes[kChat].tpot_slo = chat_tpot;
  classes[kBatch].name = "batch";
  classes[kBatch].background = true;
  classes[kBatch].tpot_slo = batch_tpot;
  for (ClassPolicy& c : classes) c.max_queue_wait = std::chrono::hours(1);
  return testing::one_pool(classes, {slots}, Policy::kHybrid);
}

TEST(CapacityView, OccupancyTellsBackgroundFromOtherWork) {
  Harness h(two_classes(2));
  EXPECT_EQ(occupancy_of(h.scheduler(), 0, 0).in_flight, 0u);
  for (uint64_t u = 1; u <= 3; ++u) h.add(u, kBatch, 0, 10, at_ms(0));
  h.poll(at_ms(1));
  Occupancy seen = occupancy_of(h.scheduler(), 0, 0);
  EXPECT_EQ(seen.in_flight, 2u);
  EXPECT_TRUE(seen.background_waiting);
  EXPECT_FALSE(seen.others_waiting);
  EXPECT_FALSE(seen.others_running);
  EXPECT_EQ(seen.others_in_flight, 0u);  // background work's slots: no shortage for the others
  h.add(10, kChat, 0, 10, at_ms(2));
  seen = occupancy_of(h.scheduler(), 0, 0);
  EXPECT_TRUE(seen.others_waiting);
  EXPECT_FALSE(seen.others_running);
}

TEST(CapacityView, GapTargetIsTheTightestBoundOfActiveForegroundClasses) {
  AdaptiveCapacityConfig config;
  config.itl_target = std::chrono::milliseconds(30);
  // chat 100 ms; batch's never counts
  Harness h(two_classes(4, std::chrono::milliseconds(100), std::chrono::milliseconds(5)));
  const std::vector<Scheduler> none;
  std::vector<bool> seen;
  const auto target = [&] { return pool_gap_target(config, std::span(&h.scheduler(), 1), 0, seen).count(); };
  EXPECT_DOUBLE_EQ(target(), 0.030);  // nothing on the pool: itl_target
  h.add(1, kBatch, 0, 10, at_ms(0));
  h.poll(at_ms(1));
  EXPECT_DOUBLE_EQ(target(), 0.030);  // background work has no bound
  h.add(2, kChat, 0, 10, at_ms(2));
  EXPECT_DOUBLE_EQ(target(), 0.1);    // chat queued
  h.poll(at_ms(3));
  EXPECT_DOUBLE_EQ(target(), 0.1);    // and running
  // Gone again: its bound still holds (issue 41: a class of short requests
  // that come and go flipped the target, and the limit, between scrapes).
  h.complete(2, at_ms(4));
  EXPECT_EQ(h.scheduler().class_in_flight(0, kChat), 0u);
  EXPECT_DOUBLE_EQ(target(), 0.1);
  std::vector<bool> fresh;
  EXPECT_DOUBLE_EQ(pool_gap_target(config, std::span(&h.scheduler(), 1), 0, fresh).count(), 0.030);
  // A fractional target is kept as declared (a fraction of a millisecond).
  Harness fine(two_classes(4, std::chrono::microseconds(43'750)));
  fine.add(1, kChat, 0, 10, at_ms(0));
  std::vector<bool> fine_seen;
  EXPECT_DOUBLE_EQ(pool_gap_target(config, std::span(&fine.scheduler(), 1), 0, fine_seen).count(), 0.04375);
  EXPECT_DOUBLE_EQ(pool_gap_target(config, none, 0, fine_seen).count(), 0.030);
}

}  // namespace
}  // namespace arbiter::sched
