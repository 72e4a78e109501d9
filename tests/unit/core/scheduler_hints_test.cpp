// Client TTFT hints in the scheduler (Request::ttft_slo, hybrid): a class's
// requests go earliest deadline first, a request's deadline its arrival
// plus its TTFT target (the hint's, or its class's); without hints the
// order is exactly the one before hints existed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using namespace std::chrono_literals;
using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

// A chat-like class: TTFT target 2 s, queue deadline 30 s.
ClassPolicy chat() {
  ClassPolicy c = named("chat");
  c.ttft_slo = 2s;
  c.max_queue_wait = 30s;
  return c;
}

Request hinted(uint64_t user, TenantId tenant, std::optional<Duration> ttft) {
  return Request{
      .user = user, .pool = 0, .klass = 0, .tenant = tenant, .cost_tokens = 10, .ttft_slo = ttft};
}

TEST(SchedulerHints, ATighterTtftHintGoesAheadInsideItsTenant) {
  Harness h(one_pool({chat()}, {1}));
  h.add(hinted(9, 1, std::nullopt), at_ms(0));  // holds the one slot
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{9}));
  h.add(hinted(1, 1, std::nullopt), at_ms(0));   // due 2000
  h.add(hinted(2, 1, std::nullopt), at_ms(10));  // due 2010
  h.add(hinted(3, 1, 300ms), at_ms(20));         // due 320: first
  h.add(hinted(4, 1, 1990ms), at_ms(30));        // due 2020: after 1 and 2
  h.add(hinted(5, 1, 1500ms), at_ms(40));        // due 1540: after 3, before 1
  h.complete(9, at_ms(50));
  EXPECT_EQ(h.drain_one_by_one(at_ms(50)), (std::vector<uint64_t>{3, 5, 1, 2, 4}));
}

TEST(SchedulerHints, AHintAtOrAboveTheClassTargetKeepsArrivalOrder) {
  // Every request must start by its queue deadline: a looser hint does not
  // postpone it behind later arrivals (it keeps the class's deadline).
  Harness h(one_pool({chat()}, {1}));
  h.add(hinted(9, 1, std::nullopt), at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{9}));
  h.add(hinted(1, 1, 2s), at_ms(0));
  h.add(hinted(2, 1, std::nullopt), at_ms(10));
  h.add(hinted(3, 1, 60s), at_ms(20));
  h.add(hinted(4, 1, std::nullopt), at_ms(30));
  h.complete(9, at_ms(40));
  EXPECT_EQ(h.drain_one_by_one(at_ms(40)), (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST(SchedulerHints, AClassWithoutATtftSloHasItsQueueDeadlineForTarget) {
  ClassPolicy c = named("plain");  // no ttft_slo: the 10 s queue deadline is its target
  c.max_queue_wait = 10s;
  Harness h(one_pool({c}, {1}));
  h.add(hinted(9, 1, std::nullopt), at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{9}));
  h.add(hinted(1, 1, std::nullopt), at_ms(0));  // due 10000
  h.add(hinted(2, 1, 9000ms), at_ms(500));      // due 9500: first
  h.add(hinted(3, 1, 9800ms), at_ms(600));      // due 10400: the deadline's 10600, after 1
  h.complete(9, at_ms(700));
  EXPECT_EQ(h.drain_one_by_one(at_ms(700)), (std::vector<uint64_t>{2, 1, 3}));
}

// When a chat request starts behind "slow" work of 100x the weight, which
// it passes only by SLO rescue (in the last half of its TTFT target).
int64_t rescued_at(std::optional<Duration> hint) {
  ClassPolicy slow = named("slow");
  slow.weight = 100;
  slow.max_queue_wait = 100s;
  Harness h(one_pool({chat(), slow}, {1}));
  h.add(Request{.user = 9, .pool = 0, .klass = 0, .tenant = 1, .cost_tokens = 1000}, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{9}));  // chat's virtual time is now far ahead
  for (uint64_t i = 0; i < 40; ++i) {
    h.add(Request{.user = 100 + i, .pool = 0, .klass = 1, .tenant = 2, .cost_tokens = 10},
          at_ms(0));
  }
  h.add(hinted(1, 1, hint), at_ms(0));
  h.complete(9, at_ms(0));
  uint64_t running = 0;
  for (int64_t t = 0; t <= 2000; t += 50) {
    if (running != 0) h.complete(running, at_ms(t));
    const auto started = h.poll(at_ms(t));
    running = started.empty() ? 0 : started.front();
    if (running == 1) return t;
  }
  return -1;
}

TEST(SchedulerHints, TheHintIsTheSloThatRescueJudgesTheRequestBy) {
  // The class's 2 s: at risk from 1 s on. A 400 ms hint: at risk at once.
  EXPECT_EQ(rescued_at(std::nullopt), 1000);
  EXPECT_EQ(rescued_at(400ms), 0);
}

// The place a request must have in its tenant's order: arrival plus its
// TTFT target on the queue deadline's scale, never past the deadline.
int64_t due_ms(int64_t arrival, std::optional<int64_t> hint_ms) {
  constexpr int64_t kWait = 30'000, kTarget = 2'000;
  return arrival + kWait + std::min<int64_t>(0, hint_ms.value_or(kTarget) - kTarget);
}

// Random arrivals from three tenants into one class, a third of them with
// TTFT hints when `hints`; requests run 20-200 ms on 2 slots, for 20 s. Every
// dispatch must be its tenant's earliest by (due, arrival): EDF with hints,
// arrival order without.
void check_tenant_order(bool hints, uint32_t seed) {
  SCOPED_TRACE(seed);
  Harness h(one_pool({chat()}, {2}));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> arrival(0, 7), coin(0, 2), tenant_of(1, 3), run_ms(20, 200),
      hint_ms(50, 4'000);
  std::vector<std::set<std::pair<int64_t, uint64_t>>> waiting(4);  // per tenant: (due, user)
  std::vector<TenantId> tenant(1);
  std::vector<std::pair<int64_t, uint64_t>> ends;  // (end ms, user)
  uint64_t next_user = 1;
  std::size_t dispatched = 0;
  for (int64_t t = 0; t < 20'000; t += 10) {
    for (auto it = ends.begin(); it != ends.end();) {
      if (it->first > t) {
        ++it;
        continue;
      }
      h.complete(it->second, at_ms(t));
      it = ends.erase(it);
    }
    if (arrival(rng) == 0) {  // 12.5 a second against ~18 served: queues build and drain
      const uint64_t user = next_user++;
      const TenantId who = static_cast<TenantId>(tenant_of(rng));
      std::optional<int64_t> hint;
      if (hints && coin(rng) == 0) hint = hint_ms(rng);
      tenant.push_back(who);
      ASSERT_TRUE(h.add(
          hinted(user, who,
                 hint ? std::optional<Duration>(std::chrono::milliseconds(*hint)) : std::nullopt),
          at_ms(t)));
      waiting[who].insert({due_ms(t, hint), user});  // users count up: the arrival tie-break
    }
    for (const uint64_t user : h.poll(at_ms(t))) {
      auto& mine = waiting[tenant[user]];
      ASSERT_FALSE(mine.empty());
      EXPECT_EQ(mine.begin()->second, user) << "at " << t << " ms, tenant " << tenant[user];
      mine.erase(
          std::find_if(mine.begin(), mine.end(), [&](const auto& e) { return e.second == user; }));
      ends.push_back({t + run_ms(rng), user});
      ++dispatched;
    }
    ASSERT_TRUE(h.actions().expired.empty());
  }
  EXPECT_GT(dispatched, 200u);
}

TEST(SchedulerHints, PropertyEachTenantIsServedEarliestDeadlineFirst) {
  for (uint32_t seed = 1; seed <= 5; ++seed) check_tenant_order(true, seed);
}

TEST(SchedulerHints, PropertyWithoutHintsEachTenantIsServedInArrivalOrder) {
  for (uint32_t seed = 1; seed <= 5; ++seed) check_tenant_order(false, seed);
}

TEST(SchedulerHints, WithoutHintsTheWholeOrderIsUnchangedByHintsElsewhere) {
  // The same arrivals, once with no hints and once with a hint equal to
  // the class's target on every request: the same dispatch order.
  const auto run = [](bool hint_everything) {
    Harness h(one_pool({chat()}, {1}));
    for (uint64_t i = 0; i < 30; ++i) {
      h.add(hinted(i + 1, static_cast<TenantId>(1 + i % 3),
                   hint_everything ? std::optional<Duration>(2s) : std::nullopt),
            at_ms(static_cast<int64_t>(i)));
    }
    return h.drain_one_by_one(at_ms(40));
  };
  EXPECT_EQ(run(false), run(true));
}

}  // namespace
}  // namespace arbiter::sched
