// Extra slots (BackendSignal::extra_slots, adaptive capacity): slots above a
// backend's limit that only background classes' work may take. The other
// classes keep the whole limit as headroom: work in the extra slots never
// keeps them from starting (also once the extra slots shrank under it), is
// never preempted for them (that would free nothing they can use), and a
// class that is not background never holds more than the limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/scheduler.hpp"
#include "scheduler_test_util.hpp"

namespace arbiter::sched::scheduler_extra_slots_test {
namespace {

using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

constexpr ClassId kChat = 0;
constexpr ClassId kBatch = 1;

ClassPolicy batch() { return testing::patient("batch", true); }

SchedulerConfig config(Policy policy, uint32_t slots = 4) {
  return one_pool({testing::patient("chat"), batch()}, {slots}, policy);
}

std::size_t count_class(const Actions& a, ClassId klass) {
  return static_cast<std::size_t>(
      std::count_if(a.dispatches.begin(), a.dispatches.end(),
                    [&](const Dispatch& d) { return d.klass == klass; }));
}

class SchedulerExtraSlots : public ::testing::TestWithParam<Policy> {};

TEST_P(SchedulerExtraSlots, OnlyBackgroundWorkTakesThem) {
  Harness h(config(GetParam()));
  h.scheduler().set_backend_state(0, 0, {.extra_slots = 3});
  for (uint64_t u = 1; u <= 10; ++u) h.add(u, kBatch, 0, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(1)).size(), 7u);  // 4 + 3
  EXPECT_EQ(h.scheduler().backend_in_flight(0, 0), 7u);
}

TEST_P(SchedulerExtraSlots, OtherClassesStayWithinTheLimit) {
  Harness h(config(GetParam()));
  h.scheduler().set_backend_state(0, 0, {.extra_slots = 3});
  for (uint64_t u = 1; u <= 10; ++u) h.add(u, kChat, 0, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(1)).size(), 4u);
  EXPECT_EQ(h.poll(at_ms(2)).size(), 0u);
}

// Background work filling the extra slots leaves the limit to the others:
// a chat request arriving then starts at once, as on an idle backend.
TEST_P(SchedulerExtraSlots, BackgroundInTheExtraSlotsNeverBlocksOthers) {
  Harness h(config(GetParam()));
  h.scheduler().set_backend_state(0, 0, {.extra_slots = 3});
  for (uint64_t u = 1; u <= 3; ++u) h.add(u, kChat, 0, 10, at_ms(0));
  for (uint64_t u = 10; u < 14; ++u) h.add(u, kBatch, 0, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(1)).size(),
            7u);  // 3 chat, 1 batch in the limit, 3 batch in the extra slots
  EXPECT_EQ(count_class(h.actions(), kChat), 3u);
  // The batch request in the limit's last slot ends: chat takes that slot
  // although 6 slots are in use, more than the limit of 4.
  h.complete(10, at_ms(2));
  h.add(30, kChat, 0, 10, at_ms(2));
  EXPECT_EQ(h.poll(at_ms(3)), std::vector<uint64_t>{30});
  // The extra slots shrink under the batch work in them: chat still has
  // its limit (the batch requests drain, they hold no slot of it).
  h.scheduler().set_backend_state(0, 0, {.extra_slots = 0});
  h.complete(30, at_ms(4));
  h.add(31, kChat, 0, 10, at_ms(4));
  EXPECT_EQ(h.poll(at_ms(5)), std::vector<uint64_t>{31});
}

// Background work waits behind others next in the policy's order: it does
// not go into the extra slots while they wait for a slot in the limit.
TEST_P(SchedulerExtraSlots, BackgroundDoesNotJumpOthersWaitingForTheLimit) {
  Harness h(config(GetParam()));
  h.scheduler().set_backend_state(0, 0, {.extra_slots = 3});
  for (uint64_t u = 1; u <= 6; ++u) h.add(u, kChat, 0, 10, at_ms(0));
  for (uint64_t u = 10; u < 14; ++u) h.add(u, kBatch, 0, 10, at_ms(1));
  h.poll(at_ms(2));
  EXPECT_EQ(count_class(h.actions(), kChat), 4u);
  EXPECT_EQ(count_class(h.actions(), kBatch), 0u);
}

TEST_P(SchedulerExtraSlots, WithoutExtraSlotsTheLimitBindsEveryone) {
  Harness h(config(GetParam()));
  for (uint64_t u = 1; u <= 10; ++u) h.add(u, kBatch, 0, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(1)).size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Policies, SchedulerExtraSlots,
                         ::testing::Values(Policy::kFifo, Policy::kPriority, Policy::kHybrid));

// Hybrid: work in an extra slot is no preemption victim for waiting chat
// work (it would free a slot chat cannot take), also after the extra slots
// shrank under it; background work in the limit's slots still is.
TEST(SchedulerExtraSlotsHybrid, PreemptsOnlyBackgroundThatHoldsTheLimit) {
  Harness h(config(Policy::kHybrid));
  h.scheduler().set_backend_state(0, 0, {.extra_slots = 3});
  for (uint64_t u = 1; u <= 2; ++u) h.add(u, kChat, 0, 10, at_ms(0));
  for (uint64_t u = 10; u < 15; ++u) h.add(u, kBatch, 0, 10, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(1)),
            (std::vector<uint64_t>{1, 2, 10, 11, 12, 13, 14}));  // 12-14: extra slots
  h.scheduler().set_backend_state(0, 0, {.extra_slots = 0});
  h.add(20, kChat, 0, 10, at_ms(2));
  h.add(21, kChat, 0, 10, at_ms(2));
  h.add(22, kChat, 0, 10, at_ms(2));
  h.poll(at_ms(3));
  // Two chat requests wait; the two batch requests in the limit's slots go.
  std::vector<uint64_t> victims;
  for (const Preemption& p : h.actions().preemptions) victims.push_back(p.user);
  std::sort(victims.begin(), victims.end());
  EXPECT_EQ(victims, (std::vector<uint64_t>{10, 11}));
}

// Property, over random arrivals, completions and extra-slot counts under
// every policy, against a model of the slots: a request that is not
// background starts only into the limit's slots (never more than the limit
// of them in flight), background work takes an extra slot only with the
// limit's slots full and fewer than `extra` extra slots taken, work in the
// extra slots is never preempted, and no chat request waits after a poll
// while the limit's slots have room.
TEST(SchedulerExtraSlotsProperty, OthersKeepTheLimitAndBackgroundUsesOnlyTheExtra) {
  for (const Policy policy : {Policy::kFifo, Policy::kPriority, Policy::kHybrid}) {
    std::mt19937 rng(static_cast<unsigned>(policy) + 5);
    constexpr uint32_t kLimit = 6;
    Harness h(config(policy, kLimit));
    std::vector<std::pair<uint64_t, bool>> running;  // user, in an extra slot
    uint32_t extra = 0, base_used = 0, extra_taken = 0, queued_chat = 0;
    uint64_t next = 1;
    const auto release = [&](std::size_t i) {
      (running[i].second ? extra_taken : base_used) -= 1;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    };
    for (int step = 0; step < 5'000; ++step) {
      const TimePoint now = at_ms(step);
      const unsigned roll = rng() % 10;
      if (roll < 2) {
        queued_chat +=
            h.add(Request{.user = next++, .klass = kChat, .cost_tokens = 10}, now).has_value();
      } else if (roll < 4) {
        h.add(Request{.user = next++, .klass = kBatch, .cost_tokens = 10}, now);
      } else if (roll < 9 && !running.empty()) {
        const std::size_t i = rng() % running.size();
        h.complete(running[i].first, now);
        release(i);
      } else {
        extra = rng() % 5;
        h.scheduler().set_backend_state(0, 0, {.extra_slots = extra});
      }
      // Polls again after requeueing victims: their slots go at the next poll.
      for (bool again = true; again;) {
        h.poll(now);
        again = !h.actions().preemptions.empty();
        for (const Dispatch& d : h.actions().dispatches) {
          const bool into_extra = base_used >= kLimit;
          if (d.klass == kChat) {
            ASSERT_FALSE(into_extra) << step;
            --queued_chat;
          } else if (into_extra) {
            ASSERT_LT(extra_taken, extra) << step;
          }
          (into_extra ? extra_taken : base_used) += 1;
          running.emplace_back(d.user, into_extra);
        }
        for (const Preemption& p : h.actions().preemptions) {
          const auto it = std::find_if(running.begin(), running.end(),
                                       [&](const auto& r) { return r.first == p.user; });
          ASSERT_NE(it, running.end());
          ASSERT_FALSE(it->second) << step;  // never a request in an extra slot
          h.scheduler().requeue_preempted(p.handle, 10, now);
          release(static_cast<std::size_t>(it - running.begin()));
        }
      }
      if (queued_chat > 0) {
        ASSERT_GE(base_used, kLimit) << step;
      }
    }
  }
}

}  // namespace
}  // namespace arbiter::sched::scheduler_extra_slots_test
