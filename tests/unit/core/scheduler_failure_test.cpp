// The scheduler's part in backend failures (issue 15): a failed run queued
// again for another backend, slow start's lower slot limit, and fail-fast
// when a pool has no live backend.
#include "scheduler_test_util.hpp"

namespace arbiter::sched::testing {
namespace {

BackendId backend_of(const Harness& h, uint64_t user) {
  for (const Dispatch& d : h.actions().dispatches) {
    if (d.user == user) return d.backend;
  }
  ADD_FAILURE() << user << " was not dispatched";
  return 0;
}

TEST(SchedulerFailure, AFailedRunIsRetriedOnAnotherBackendWithRoom) {
  for (BackendId failed = 0; failed < 3; ++failed) {
    Harness h(one_pool({named("c")}, {4, 4, 4}));
    // Three requests: one per backend (the pick rotates); the one on `failed` fails.
    for (uint64_t i = 0; i < 3; ++i) h.add(i, 0, 0, 10, at_ms(0));
    h.poll(at_ms(0));
    uint64_t victim = 0;
    for (const Dispatch& d : h.actions().dispatches) {
      if (d.backend == failed) victim = d.user;
    }
    ASSERT_TRUE(h.scheduler().requeue_failed(h.handle(victim), 10, at_ms(5)));
    EXPECT_EQ(h.scheduler().backend_in_flight(0, failed), 0u);
    EXPECT_EQ(h.scheduler().queued(), 1u);
    // Least loaded would be `failed` itself (now empty): the retry goes elsewhere.
    ASSERT_EQ(h.poll(at_ms(6)), std::vector<uint64_t>{victim});
    EXPECT_NE(backend_of(h, victim), failed);
    EXPECT_EQ(h.actions().dispatches.front().placement, Placement::kAvoidFailed);
  }
}

TEST(SchedulerFailure, ARetryWaitsForAnotherLiveBackendAndReturnsOnlyWhenNoneIsLeft) {
  Harness h(one_pool({named("c")}, {1, 1}));
  h.add(1, 0, 0, 10, at_ms(0));
  h.add(2, 0, 0, 10, at_ms(0));
  h.poll(at_ms(0));
  const BackendId failed = backend_of(h, 1);
  ASSERT_TRUE(h.scheduler().requeue_failed(h.handle(1), 10, at_ms(1)));
  // The other backend is full (or saturated): the retry waits for it rather
  // than going back to the one that just failed it.
  EXPECT_TRUE(h.poll(at_ms(2)).empty());
  h.scheduler().set_backend_state(0, failed == 0 ? 1 : 0, {.saturated = true});
  EXPECT_TRUE(h.poll(at_ms(3)).empty());
  h.scheduler().set_backend_state(0, failed == 0 ? 1 : 0, {});
  EXPECT_TRUE(h.complete(2, at_ms(4)));
  ASSERT_EQ(h.poll(at_ms(5)), std::vector<uint64_t>{1});
  EXPECT_NE(backend_of(h, 1), failed);

  // The other one down: back to the failed one, rather than no answer.
  Harness alone(one_pool({named("c")}, {1, 1}));
  alone.add(1, 0, 0, 10, at_ms(0));
  alone.poll(at_ms(0));
  const BackendId first = backend_of(alone, 1);
  alone.scheduler().set_backend_state(0, first == 0 ? 1 : 0, {.down = true});
  ASSERT_TRUE(alone.scheduler().requeue_failed(alone.handle(1), 10, at_ms(1)));
  ASSERT_EQ(alone.poll(at_ms(2)), std::vector<uint64_t>{1});
  EXPECT_EQ(backend_of(alone, 1), first);
}

TEST(SchedulerFailure, ARetriedRequestGoesFirstAndIsChargedOnce) {
  Harness h(one_pool({named("c")}, {1}));
  h.add(1, 0, 0, 10, at_ms(0));
  h.add(2, 0, 0, 10, at_ms(1));
  ASSERT_EQ(h.poll(at_ms(1)), std::vector<uint64_t>{1});
  ASSERT_TRUE(h.scheduler().requeue_failed(h.handle(1), 10, at_ms(2)));
  EXPECT_EQ(h.poll(at_ms(3)), std::vector<uint64_t>{1}) << "the retry keeps its place ahead of 2";
  // Only running requests fail: a queued one is refused, a stale handle too.
  EXPECT_FALSE(h.scheduler().requeue_failed(h.handle(2), 10, at_ms(3)));
  EXPECT_TRUE(h.complete(1, at_ms(4)));
  EXPECT_FALSE(h.scheduler().requeue_failed(h.handle(1), 10, at_ms(4)));
  EXPECT_EQ(h.scheduler().counters().classes[0].dispatched, 2u);
}

TEST(SchedulerFailure, SlowStartLowersABackendsSlotsAndCapacity) {
  Harness h(one_pool({named("c")}, {8, 8}));
  Scheduler& s = h.scheduler();
  EXPECT_TRUE(s.set_backend_state(0, 0, {.max_in_flight = 2}));
  EXPECT_EQ(s.capacity(0), 10u);
  for (uint64_t i = 0; i < 12; ++i) h.add(i, 0, 0, 10, at_ms(0));
  h.poll(at_ms(0));
  EXPECT_EQ(s.backend_in_flight(0, 0), 2u);
  EXPECT_EQ(s.backend_in_flight(0, 1), 8u);
  // The ramp goes on: more slots open, and a cap above the limit is the limit.
  EXPECT_TRUE(s.set_backend_state(0, 0, {.max_in_flight = 100}));
  EXPECT_EQ(s.capacity(0), 16u);
  h.poll(at_ms(1));
  EXPECT_EQ(s.backend_in_flight(0, 0), 4u);
  EXPECT_FALSE(s.set_backend_state(0, 0, {.max_in_flight = 100})) << "the same verdict";
}

TEST(SchedulerFailure, APoolWithNoLiveBackendAnswersAtOnce) {
  Harness h(one_pool({named("c")}, {1, 1}));
  Scheduler& s = h.scheduler();
  for (uint64_t i = 0; i < 5; ++i) h.add(i, 0, 0, 10, at_ms(0));
  h.poll(at_ms(0));  // 0 and 1 run, 2..4 wait
  s.set_backend_state(0, 0, {.down = true});
  h.poll(at_ms(1));
  EXPECT_TRUE(h.actions().expired.empty()) << "one backend is still up";
  s.set_backend_state(0, 1, {.down = true});
  h.poll(at_ms(2));
  ASSERT_EQ(h.actions().expired.size(), 3u);
  for (const Expired& e : h.actions().expired) {
    EXPECT_TRUE(e.no_backend);
    EXPECT_EQ(e.retry_after, kNoBackendRetryAfter);
  }
  EXPECT_EQ(s.queued(), 0u);
  const auto refused = s.enqueue(Request{.user = 9, .pool = 0, .klass = 0, .tenant = 0, .cost_tokens = 10}, at_ms(3));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kBackendsDown);
  EXPECT_EQ(refused.error().retry_after, kNoBackendRetryAfter);
  EXPECT_EQ(s.counters().classes[0].no_backend, 3u);
  EXPECT_EQ(s.counters().classes[0].rejected_no_backend, 1u);
  // One back: queued again as usual.
  s.set_backend_state(0, 1, {});
  EXPECT_TRUE(s.enqueue(Request{.user = 10, .pool = 0, .klass = 0, .tenant = 0, .cost_tokens = 10}, at_ms(4)));
}

TEST(SchedulerFailure, ARequeuedStreamInAStrandedPoolIsAnsweredToo) {
  Harness h(one_pool({named("c")}, {1}));
  Scheduler& s = h.scheduler();
  h.add(1, 0, 0, 10, at_ms(0));
  h.poll(at_ms(0));
  ASSERT_TRUE(s.requeue_failed(h.handle(1), 10, at_ms(1)));  // never expires by its deadline
  s.set_backend_state(0, 0, {.down = true});
  h.poll(at_ms(2));
  ASSERT_EQ(h.actions().expired.size(), 1u);
  EXPECT_EQ(h.actions().expired.front().user, 1u);
}

}  // namespace
}  // namespace arbiter::sched::testing
