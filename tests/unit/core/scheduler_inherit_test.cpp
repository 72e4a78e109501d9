// Scheduler::inherit (typing through): a superseding request takes over the
// running generation's slot; examples, refusals, and a random sequence that
// must drain every gauge back to zero.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using namespace std::chrono_literals;
using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

ClassPolicy completion(bool typing_through = true, Duration debounce = Duration::zero()) {
  ClassPolicy c = named("completion");
  c.typing_through = typing_through;
  c.debounce = debounce;
  return c;
}

TEST(SchedulerInherit, TheHeirTakesTheRunningSlotWithoutADispatch) {
  Harness h(one_pool({completion()}, {1, 1}));
  h.add(1, 0, 1, 100, at_ms(0), "k");
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
  const BackendId backend = h.actions().dispatches.front().backend;
  const Admission second = h.add(2, 0, 1, 100, at_ms(5), "k");
  ASSERT_TRUE(second.superseded && second.superseded->in_flight);
  ASSERT_TRUE(h.scheduler().inherit(second.handle, second.superseded->handle, at_ms(5)));
  Scheduler& s = h.scheduler();
  EXPECT_EQ(s.queued(), 0u);
  EXPECT_EQ(s.in_flight(), 1u);
  EXPECT_EQ(s.backend_in_flight(0, backend), 1u);
  EXPECT_TRUE(h.poll(at_ms(5)).empty());  // nothing to dispatch: the heir runs already
  EXPECT_FALSE(h.complete(1, at_ms(6)));  // the old handle is gone
  EXPECT_TRUE(h.complete(2, at_ms(7), 150));
  EXPECT_EQ(s.in_flight(), 0u);
  EXPECT_EQ(s.backend_in_flight(0, backend), 0u);
  EXPECT_EQ(s.tenant_queues(), 0u);
  const ClassCounters total = s.counters().total();
  EXPECT_EQ(total.typed_through, 1u);
  EXPECT_EQ(total.superseded_in_flight, 1u);
  EXPECT_EQ(total.dispatched, 1u);
  EXPECT_EQ(total.completed, 1u);
}

TEST(SchedulerInherit, AHeldHeirInheritsToo) {
  Harness h(one_pool({completion(true, 30ms)}, {1}));
  h.add(1, 0, 1, 100, at_ms(0), "k");
  ASSERT_EQ(h.poll(at_ms(30)), (std::vector<uint64_t>{1}));
  const Admission second = h.add(2, 0, 1, 100, at_ms(40), "k");
  ASSERT_TRUE(h.scheduler().inherit(second.handle, second.superseded->handle, at_ms(40)));
  EXPECT_FALSE(h.scheduler().next_wakeup().has_value());  // no debounce left to end
  // A third keystroke supersedes the heir's (inherited) run like any other.
  const Admission third = h.add(3, 0, 1, 100, at_ms(50), "k");
  ASSERT_TRUE(third.superseded && third.superseded->in_flight);
  EXPECT_EQ(third.superseded->user, 2u);
}

TEST(SchedulerInherit, RefusedWhenTheClassDoesNotAllowIt) {
  Harness h(one_pool({completion(false)}, {1}));
  h.add(1, 0, 1, 100, at_ms(0), "k");
  h.poll(at_ms(0));
  const Admission second = h.add(2, 0, 1, 100, at_ms(5), "k");
  EXPECT_FALSE(h.scheduler().inherit(second.handle, second.superseded->handle, at_ms(5)));
  EXPECT_EQ(h.scheduler().counters().total().typed_through, 0u);
  EXPECT_EQ(h.scheduler().queued(), 1u);
}

TEST(SchedulerInherit, RefusedForARunningHeirOrAnOldRequestNotAborting) {
  Harness h(one_pool({completion()}, {2}));
  h.add(1, 0, 1, 100, at_ms(0), "a");
  h.add(2, 0, 1, 100, at_ms(0), "b");
  ASSERT_EQ(h.poll(at_ms(0)).size(), 2u);
  // 1 is running, not superseded: nothing to inherit from it.
  h.add(3, 0, 1, 100, at_ms(1), "c");
  EXPECT_FALSE(h.scheduler().inherit(h.handle(3), h.handle(1), at_ms(1)));
  // 2 is running: it cannot inherit anything.
  const Admission fourth = h.add(4, 0, 1, 100, at_ms(2), "a");
  EXPECT_FALSE(h.scheduler().inherit(h.handle(2), fourth.superseded->handle, at_ms(2)));
  // Another tenant's request never inherits.
  EXPECT_FALSE(h.scheduler().inherit(h.add(5, 0, 2, 100, at_ms(3)).handle, fourth.superseded->handle, at_ms(3)));
  EXPECT_TRUE(h.scheduler().inherit(fourth.handle, fourth.superseded->handle, at_ms(3)));
}

TEST(SchedulerInherit, RefusedAcrossClasses) {
  // The slot is counted in its class's queue, and the tenant queue the
  // check compares is per class: an heir of another class never inherits.
  ClassPolicy other = completion();
  other.name = "chat";
  Harness h(one_pool({completion(), other}, {2}));
  h.add(1, 0, 1, 100, at_ms(0), "k");
  ASSERT_EQ(h.poll(at_ms(0)).size(), 1u);
  const Admission second = h.add(2, 1, 1, 100, at_ms(1), "k");
  ASSERT_TRUE(second.superseded && second.superseded->in_flight);
  EXPECT_FALSE(h.scheduler().inherit(second.handle, second.superseded->handle, at_ms(1)));
  EXPECT_EQ(h.scheduler().counters().total().typed_through, 0u);
}

// Random keystrokes on a few keys: each supersede of a running request is
// inherited or completed (aborted) at random, runs finish at random; at the
// end everything drains to zero and no backend ever exceeds its slots.
TEST(SchedulerInherit, PropertyRandomTypingDrainsToZero) {
  Harness h(one_pool({completion(true, 10ms)}, {2, 2}));
  Scheduler& s = h.scheduler();
  std::mt19937_64 rng(5);
  std::vector<uint64_t> running;  // users holding a slot (in flight or aborting)
  uint64_t user = 0, inherited = 0;
  int64_t now = 0;
  const auto drop = [&](uint64_t u) { std::erase(running, u); };
  for (int step = 0; step < 20000; ++step) {
    now += static_cast<int64_t>(rng() % 7);
    if (rng() % 3 != 0) {
      const std::string key = "k" + std::to_string(rng() % 4);
      const Admission a = h.add(++user, 0, 1, 100, at_ms(now), key);
      if (a.superseded && a.superseded->in_flight) {
        if (rng() % 2 == 0 && s.inherit(a.handle, a.superseded->handle, at_ms(now))) {
          ++inherited;
          drop(a.superseded->user);
          running.push_back(user);
        } else {
          ASSERT_TRUE(s.complete(a.superseded->handle, at_ms(now)));
          drop(a.superseded->user);
        }
      }
    } else if (!running.empty()) {
      const uint64_t u = running[rng() % running.size()];
      EXPECT_TRUE(h.complete(u, at_ms(now), 120));
      drop(u);
    }
    for (const uint64_t u : h.poll(at_ms(now))) running.push_back(u);
    for (BackendId b = 0; b < 2; ++b) ASSERT_LE(s.backend_in_flight(0, b), 2u);
    ASSERT_EQ(s.in_flight(), running.size());
  }
  EXPECT_GT(inherited, 100u);
  // Drain: finish everything, let every hold end and run.
  for (int round = 0; round < 1000 && (s.queued() > 0 || !running.empty()); ++round) {
    now += 20;
    for (const uint64_t u : running) EXPECT_TRUE(h.complete(u, at_ms(now), 120));
    running = h.poll(at_ms(now));
  }
  EXPECT_EQ(s.queued(), 0u);
  EXPECT_EQ(s.in_flight(), 0u);
  EXPECT_EQ(s.tenant_queues(), 0u);
  EXPECT_EQ(s.supersede_keys(), 0u);
  EXPECT_EQ(s.queue_depth(0, 0), 0u);
  EXPECT_EQ(s.class_in_flight(0, 0), 0u);
  EXPECT_EQ(s.counters().total().typed_through, inherited);
}

}  // namespace
}  // namespace arbiter::sched
