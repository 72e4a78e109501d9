// The relays' count of a backend's inter-event gaps (adaptive capacity):
// within the target or not, several events of one read sharing its gap,
// taken (and reset) at each scrape, and counted from many threads at once.
#include "gateway/stream_gaps.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace arbiter {
namespace {

using namespace std::chrono_literals;

TEST(StreamGaps, CountsGapsWithinTheTarget) {
  StreamGaps gaps;
  gaps.set_target(30ms);
  gaps.count(1, 10ms);
  gaps.count(1, 30ms);
  gaps.count(1, 31ms);
  const sched::GapCounts c = gaps.take();
  EXPECT_EQ(c.total, 3u);
  EXPECT_EQ(c.within, 2u);
}

// Issue 41: the time counts too (an engine busy with prefill chunks has few
// slow steps by count and most of its time in them), and first events
// against their class's headroom.
TEST(StreamGaps, CountsTheGapsTimeFirstTokensAndAbandonedRuns) {
  StreamGaps gaps;
  gaps.set_target(30ms);
  gaps.count(1, 10ms);
  gaps.count(1, 20ms);
  gaps.count(1, 200ms);
  gaps.count_first(false);
  gaps.count_first(true);
  gaps.count_abandoned();
  const sched::GapCounts c = gaps.take();
  EXPECT_EQ(c.within, 2u);
  EXPECT_NEAR(c.seconds, 0.230, 1e-9);
  EXPECT_NEAR(c.within_seconds, 0.030, 1e-9);
  EXPECT_EQ(c.firsts, 2u);
  EXPECT_EQ(c.firsts_slow, 1u);
  EXPECT_EQ(c.abandoned, 1u);
  const sched::GapCounts again = gaps.take();
  EXPECT_EQ(again.firsts + again.firsts_slow + again.abandoned, 0u);
  EXPECT_EQ(again.seconds, 0);
}

TEST(StreamGaps, EventsOfOneReadShareItsGap) {
  StreamGaps gaps;
  gaps.set_target(30ms);
  gaps.count(4, 100ms);  // 25 ms each
  gaps.count(2, 100ms);  // 50 ms each
  const sched::GapCounts c = gaps.take();
  EXPECT_EQ(c.total, 6u);
  EXPECT_EQ(c.within, 4u);
}

TEST(StreamGaps, NothingIsWithinBeforeATargetIsSetAndTakeResets) {
  StreamGaps gaps;
  gaps.count(1, 1ms);
  EXPECT_EQ(gaps.take().within, 0u);
  gaps.set_target(30ms);
  gaps.count(2, 2ms);
  EXPECT_EQ(gaps.take().within, 2u);
  const sched::GapCounts again = gaps.take();
  EXPECT_EQ(again.total + again.within, 0u);
}

TEST(StreamGaps, ManyThreadsCountEveryGap) {
  StreamGaps gaps;
  gaps.set_target(30ms);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10'000; ++i) gaps.count(1, i % 2 ? 1ms : 100ms);
    });
  }
  for (std::thread& t : threads) t.join();
  const sched::GapCounts c = gaps.take();
  EXPECT_EQ(c.total, 40'000u);
  EXPECT_EQ(c.within, 20'000u);
}

}  // namespace
}  // namespace arbiter
