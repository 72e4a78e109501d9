// The sliding count: what it counts at each moment, when an event leaves it,
// gaps longer than the window, and its size.
#include "core/resilience/sliding_count.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace arbiter::resilience::sliding_count_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);  // a slice boundary

TEST(SlidingCount, CountsWhatWasAddedWithinTheWindow) {
  SlidingCount c(seconds(10));
  EXPECT_EQ(c.count(t0), 0u);
  c.add(t0);
  c.add(t0 + milliseconds(500), 2);
  c.add(t0 + seconds(3));
  EXPECT_EQ(c.count(t0 + seconds(3)), 4u);
  EXPECT_EQ(c.count(t0 + milliseconds(9999)), 4u);
  // t0's slice leaves at t0 + 10 s, with both of its adds, the later one
  // after 9.5 s: never later than the window.
  EXPECT_EQ(c.count(t0 + seconds(10)), 1u);
  EXPECT_EQ(c.count(t0 + milliseconds(12999)), 1u);
  EXPECT_EQ(c.count(t0 + seconds(13)), 0u);
}

TEST(SlidingCount, AGapLongerThanTheWindowForgetsEverything) {
  SlidingCount c(seconds(10));
  for (int i = 0; i < 10; ++i) c.add(t0 + seconds(i));
  EXPECT_EQ(c.count(t0 + seconds(9)), 10u);
  // The ring's slots are reused: an add long after finds none of the old.
  c.add(t0 + seconds(35));
  EXPECT_EQ(c.count(t0 + seconds(35)), 1u);
  c.add(t0 + seconds(44));
  EXPECT_EQ(c.count(t0 + seconds(44)), 2u);
  EXPECT_EQ(c.count(t0 + seconds(45)), 1u);
}

TEST(SlidingCount, ClearEmptiesIt) {
  SlidingCount c(seconds(10));
  c.add(t0, 5);
  c.clear();
  EXPECT_EQ(c.count(t0), 0u);
  c.add(t0 + seconds(1));
  EXPECT_EQ(c.count(t0 + seconds(1)), 1u);
}

TEST(SlidingCount, IsSmall) { EXPECT_LE(sizeof(SlidingCount), 72u); }

// The running total against a plain recount of every add still in the
// window, over random gaps (within a slice, across some, past the window).
TEST(SlidingCount, TheRunningTotalIsAPlainRecount) {
  std::mt19937_64 rng(7);
  const Duration window = std::chrono::seconds(10), slice = window / SlidingCount::kSlices;
  SlidingCount c(window);
  std::vector<std::pair<int64_t, uint32_t>> adds;  // (slice, n)
  TimePoint now = TimePoint(std::chrono::hours(1));
  for (int i = 0; i < 20'000; ++i) {
    const int gap = static_cast<int>(rng() % 100);
    now += gap < 70 ? std::chrono::milliseconds(rng() % 50) : gap < 97 ? std::chrono::milliseconds(rng() % 3000)
                                                                      : std::chrono::milliseconds(rng() % 30'000);
    const int64_t slot = now.time_since_epoch() / slice;
    if (rng() % 3 != 0) {
      const auto n = static_cast<uint32_t>(1 + rng() % 3);
      c.add(now, n);
      adds.emplace_back(slot, n);
    }
    uint64_t expected = 0;
    for (const auto& [s, n] : adds) expected += s > slot - SlidingCount::kSlices ? n : 0;
    ASSERT_EQ(c.count(now), expected) << "step " << i;
    // Later times without adds: what is left once slices leave the window.
    const TimePoint later = now + slice * static_cast<int64_t>(rng() % 12);
    const int64_t later_slot = later.time_since_epoch() / slice;
    uint64_t left = 0;
    for (const auto& [s, n] : adds) left += s > later_slot - SlidingCount::kSlices ? n : 0;
    ASSERT_EQ(c.count(later), left) << "step " << i;
    if (adds.size() > 400) adds.erase(adds.begin(), adds.begin() + 200);
  }
}

}  // namespace
}  // namespace arbiter::resilience::sliding_count_test
