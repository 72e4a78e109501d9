// The scheduler's building blocks: the indexed heap and the decaying rate.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/sched_heap.hpp"
#include "core/sched_rate.hpp"

namespace arbiter::sched {
namespace {

TEST(SchedulerHeap, MatchesAnOrderedSetUnderRandomPushEraseRekey) {
  IndexedHeap<OrderKey> heap;
  std::vector<uint32_t> pos(2000, kNoPos);
  std::vector<int64_t> key(2000, 0);
  std::set<std::pair<int64_t, uint32_t>> model;  // (primary, id); seq == id
  auto set_pos = [&](uint32_t id, uint32_t p) { pos[id] = p; };
  std::mt19937 rng(42);
  for (int step = 0; step < 200'000; ++step) {
    const uint32_t id = rng() % 2000;
    const int64_t k = static_cast<int64_t>(rng() % 500);
    if (pos[id] == kNoPos) {
      heap.push({k, id}, id, set_pos);
      key[id] = k;
      model.insert({k, id});
    } else if (rng() % 2 == 0) {
      heap.erase(pos[id], set_pos);
      model.erase({key[id], id});
      ASSERT_EQ(pos[id], kNoPos);
    } else {
      heap.rekey(pos[id], {k, id}, set_pos);
      model.erase({key[id], id});
      key[id] = k;
      model.insert({k, id});
    }
    ASSERT_EQ(heap.size(), model.size());
    if (!model.empty()) {
      ASSERT_EQ(heap.top().id, model.begin()->second);
      ASSERT_EQ(pos[heap.top().id], 0u);
    }
  }
  for (uint32_t id = 0; id < 2000; ++id) {
    if (pos[id] != kNoPos) {
      ASSERT_EQ(heap.at(pos[id]).id, id);
    }
  }
}

TEST(SchedulerHeap, DecayingRateConvergesToASteadyRate) {
  using Ms = std::chrono::milliseconds;
  DecayingRate rate(std::chrono::seconds(10));
  const auto t0 = DecayingRate::Clock::time_point(Ms(0));
  EXPECT_EQ(rate.per_second(t0), 0.0);
  for (int i = 1; i <= 300; ++i) rate.add(t0 + Ms(100 * i), 50);  // 500 per second
  EXPECT_NEAR(rate.per_second(t0 + Ms(30'000)), 500.0, 10.0);
  // After early samples the estimate is already in the right range.
  DecayingRate early(std::chrono::seconds(10));
  for (int i = 1; i <= 20; ++i) early.add(t0 + Ms(100 * i), 50);
  EXPECT_NEAR(early.per_second(t0 + Ms(2000)), 500.0, 60.0);
  // And it decays once completions stop.
  EXPECT_LT(rate.per_second(t0 + Ms(60'000)), 50.0);
}

}  // namespace
}  // namespace arbiter::sched
