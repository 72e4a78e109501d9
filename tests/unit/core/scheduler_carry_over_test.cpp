// Scheduler::carry_over and carry_counters (a config reload): requests of
// the old scheduler placed in a new one keep their place, their deadline and
// the slots they hold, so the new one never overcommits a backend.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>

#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using namespace std::chrono_literals;
using testing::at_ms;
using testing::named;
using testing::one_pool;

Request request(uint64_t user, ClassId klass = 0, TenantId tenant = 1, std::string_view key = {}) {
  return Request{.user = user, .pool = 0, .klass = klass, .tenant = tenant, .cost_tokens = 100, .supersede_key = key};
}

TEST(SchedulerCarryOver, ARunningRequestHoldsItsSlotInTheNewScheduler) {
  Scheduler s = *Scheduler::create(one_pool({named("chat")}, {1, 1}));
  const auto carried = s.carry_over(request(1), {.running = true, .run_pool = 0, .backend = 1}, at_ms(0));
  ASSERT_TRUE(carried.has_value());
  EXPECT_EQ(s.in_flight(), 1u);
  EXPECT_EQ(s.backend_in_flight(0, 1), 1u);
  // A new request goes to the free backend; a third waits for a slot.
  ASSERT_TRUE(s.enqueue(request(2), at_ms(1)).has_value());
  ASSERT_TRUE(s.enqueue(request(3), at_ms(1)).has_value());
  Actions out;
  s.poll(at_ms(1), out);
  ASSERT_EQ(out.dispatches.size(), 1u);
  EXPECT_EQ(out.dispatches[0].user, 2u);
  EXPECT_EQ(out.dispatches[0].backend, 0u);
  // The carried request ends: its slot goes to the waiting one.
  EXPECT_TRUE(s.complete(*carried, at_ms(2)));
  out.clear();
  s.poll(at_ms(2), out);
  ASSERT_EQ(out.dispatches.size(), 1u);
  EXPECT_EQ(out.dispatches[0].user, 3u);
  EXPECT_EQ(out.dispatches[0].backend, 1u);
  EXPECT_EQ(s.counters().total().carried_over, 1u);
}

TEST(SchedulerCarryOver, AQueuedRequestKeepsItsDeadlineAndIgnoresLimits) {
  ClassPolicy chat = named("chat");
  chat.max_queue = 1;
  chat.max_queue_wait = 10s;
  Scheduler s = *Scheduler::create(one_pool({chat}, {1}));
  ASSERT_TRUE(s.carry_over(request(1), {.running = true, .run_pool = 0, .backend = 0}, at_ms(0)));
  // Two queued ones, beyond max_queue: both placed; the first with the old
  // deadline (500 ms), not the class's 10 s from now.
  const auto first = s.carry_over(request(2), {.deadline = at_ms(500)}, at_ms(0));
  const auto second = s.carry_over(request(3), {}, at_ms(0));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(s.queued(), 2u);
  EXPECT_EQ(s.queue_deadline(*first), at_ms(500));
  EXPECT_EQ(s.queue_deadline(*second), TimePoint::max());
  Actions out;
  s.poll(at_ms(501), out);
  ASSERT_EQ(out.expired.size(), 1u);
  EXPECT_EQ(out.expired[0].user, 2u);
  EXPECT_TRUE(out.dispatches.empty());  // the backend's slot is the carried running request's
  // A new request meets the class's limit as usual (one queued already).
  EXPECT_FALSE(s.enqueue(request(4), at_ms(502)).has_value());
}

TEST(SchedulerCarryOver, QueuedRequestsKeepTheirOrderAndTheirSupersedeKey) {
  Scheduler s = *Scheduler::create(one_pool({named("chat")}, {1}));
  for (uint64_t u = 1; u <= 3; ++u) ASSERT_TRUE(s.carry_over(request(u, 0, 1, u == 2 ? "k" : ""), {}, at_ms(0)));
  // The key carried over: a newer request with it replaces request 2.
  const auto admitted = s.enqueue(request(4, 0, 1, "k"), at_ms(1));
  ASSERT_TRUE(admitted && admitted->superseded);
  EXPECT_EQ(admitted->superseded->user, 2u);
  std::vector<uint64_t> order;
  for (int i = 0; i < 3; ++i) {
    Actions out;
    s.poll(at_ms(2), out);
    ASSERT_EQ(out.dispatches.size(), 1u);
    order.push_back(out.dispatches[0].user);
    s.complete(out.dispatches[0].handle, at_ms(2));
  }
  // 1 before 3, as they were queued (where the replacement goes is the
  // supersede rule's business, not the carry's).
  std::erase(order, 4u);
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 3}));
}

TEST(SchedulerCarryOver, UnknownPoolClassOrBackendIsRefused) {
  Scheduler s = *Scheduler::create(one_pool({named("chat")}, {1}));
  EXPECT_FALSE(s.carry_over(request(1, 3), {}, at_ms(0)));
  Request other_pool = request(2);
  other_pool.pool = 1;
  EXPECT_FALSE(s.carry_over(other_pool, {}, at_ms(0)));
  EXPECT_FALSE(s.carry_over(request(3), {.running = true, .run_pool = 0, .backend = 1}, at_ms(0)));
  EXPECT_EQ(s.queued() + s.in_flight(), 0u);
}

TEST(SchedulerCarryOver, CountersCarryByClass) {
  Scheduler old = *Scheduler::create(one_pool({named("a"), named("b")}, {1}));
  ASSERT_TRUE(old.enqueue(request(1, 0), at_ms(0)).has_value());
  ASSERT_TRUE(old.enqueue(request(2, 1), at_ms(0)).has_value());
  Scheduler next = *Scheduler::create(one_pool({named("b")}, {1}));
  const std::optional<ClassId> classes[] = {std::nullopt, ClassId{0}};  // a dropped, b -> 0
  const std::optional<PoolId> pools[] = {PoolId{0}};
  next.carry_counters(old.counters(), classes, pools);
  EXPECT_EQ(next.counters().classes[0].enqueued, 1u);
  EXPECT_EQ(next.counters().total().enqueued, 1u);
}

// Random traffic, then every live request carried into a fresh scheduler
// (running ones where they run): the new one's counts equal the old one's,
// and once everything is completed or cancelled they drain to zero.
TEST(SchedulerCarryOver, RandomStateCarriesExactly) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coin(0, 9);
  for (int round = 0; round < 50; ++round) {
    ClassPolicy a = named("a"), b = named("b");
    b.debounce = 20ms;
    const SchedulerConfig config = one_pool({a, b}, {2, 3, 1});
    Scheduler old = *Scheduler::create(config);
    struct Live {
      Request request;
      Handle handle;
      std::optional<BackendId> running;
    };
    std::map<uint64_t, Live> live;  // by user, in arrival order
    TimePoint now = at_ms(0);
    for (uint64_t u = 1; u <= 40; ++u) {
      now += 1ms;
      const Request r = request(u, coin(rng) < 5 ? 0 : 1, static_cast<TenantId>(coin(rng) % 3),
                                coin(rng) == 0 ? "key" : "");
      if (auto admitted = old.enqueue(r, now)) {
        if (admitted->superseded && !admitted->superseded->in_flight) live.erase(admitted->superseded->user);
        live[u] = {r, admitted->handle, std::nullopt};
      }
      Actions out;
      old.poll(now, out);
      for (const Dispatch& d : out.dispatches) live[d.user].running = d.backend;
      for (const Expired& e : out.expired) live.erase(e.user);
      if (coin(rng) < 3) {
        for (auto it = live.begin(); it != live.end(); ++it) {
          if (!it->second.running) continue;
          old.complete(it->second.handle, now);
          live.erase(it);
          break;
        }
      }
    }
    Scheduler next = *Scheduler::create(config);
    std::vector<Handle> carried;
    for (const auto& [user, l] : live) {
      const auto deadline = old.queue_deadline(l.handle);
      Scheduler::Carried state{.deadline = deadline.value_or(TimePoint::max())};
      if (l.running && !deadline) {
        state.running = true;
        state.backend = *l.running;
      }
      auto h = next.carry_over(l.request, state, now);
      ASSERT_TRUE(h);
      carried.push_back(*h);
    }
    EXPECT_EQ(next.queued(), old.queued());
    EXPECT_EQ(next.in_flight(), old.in_flight());
    for (BackendId be = 0; be < 3; ++be) EXPECT_EQ(next.backend_in_flight(0, be), old.backend_in_flight(0, be));
    for (const Handle h : carried) {
      if (!next.complete(h, now)) next.cancel(h);
    }
    EXPECT_EQ(next.queued(), 0u);
    EXPECT_EQ(next.in_flight(), 0u);
    EXPECT_EQ(next.tenant_queues(), 0u);
    EXPECT_EQ(next.supersede_keys(), 0u);
  }
}

}  // namespace
}  // namespace arbiter::sched
