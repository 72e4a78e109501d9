// The sliding count: what it counts at each moment, when an event leaves it,
// gaps longer than the window, and its size.
#include "core/resilience/sliding_count.hpp"

#include <gtest/gtest.h>

namespace arbiter::resilience {
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

TEST(SlidingCount, IsSmall) { EXPECT_LE(sizeof(SlidingCount), 64u); }

}  // namespace
}  // namespace arbiter::resilience
