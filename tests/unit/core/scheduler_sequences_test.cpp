// Requests that run several sequences at once (OpenAI `n`, a completions
// batch's prompts; Request::sequences): each holds a slot per sequence on its
// backend, in its class's and tenant's counts, in a tenant cap and in what a
// preemption frees. It starts whenever its backend has one slot free; the
// backend then takes nothing new until it is below its limit again.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "scheduler_test_util.hpp"

namespace arbiter::sched::scheduler_sequences_test {
namespace {

using namespace std::chrono_literals;
using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

constexpr ClassId kChat = 0;
constexpr ClassId kBatch = 1;

ClassPolicy chat() { return testing::patient("chat"); }
ClassPolicy batch() { return testing::patient("batch", true); }

Request request(uint64_t user, ClassId klass, uint32_t sequences, TenantId tenant = 0) {
  return Request{.user = user,
                 .pool = 0,
                 .klass = klass,
                 .tenant = tenant,
                 .cost_tokens = 100,
                 .sequences = sequences};
}

class SchedulerSequences : public ::testing::TestWithParam<Policy> {};

TEST_P(SchedulerSequences, ARequestHoldsASlotPerSequence) {
  Harness h(one_pool({chat(), batch()}, {8}, GetParam()));
  ASSERT_TRUE(h.add(request(1, kChat, 4), at_ms(0)));
  for (uint64_t u = 2; u <= 10; ++u) ASSERT_TRUE(h.add(request(u, kChat, 1), at_ms(0)));
  EXPECT_EQ(h.poll(at_ms(1)), (std::vector<uint64_t>{1, 2, 3, 4, 5}));  // 4 + 4 x 1 slots
  Scheduler& s = h.scheduler();
  EXPECT_EQ(s.backend_in_flight(0, 0), 8u);
  EXPECT_EQ(s.class_in_flight(0, kChat), 8u);
  EXPECT_EQ(s.in_flight(), 5u) << "requests, not slots";
  EXPECT_TRUE(h.poll(at_ms(2)).empty());
  // Its end gives all four slots back.
  EXPECT_TRUE(h.complete(1, at_ms(3)));
  EXPECT_EQ(h.poll(at_ms(3)), (std::vector<uint64_t>{6, 7, 8, 9}));
  EXPECT_EQ(s.backend_in_flight(0, 0), 8u);
}

// One free slot is enough to start it (no request waits for a fit and blocks
// the queue behind it); the backend is then over its limit, and takes nothing
// new until enough of its work has ended.
TEST_P(SchedulerSequences, ItStartsOnOneFreeSlotAndTheBackendWaitsBelowItsLimit) {
  Harness h(one_pool({chat(), batch()}, {8}, GetParam()));
  for (uint64_t u = 1; u <= 7; ++u) ASSERT_TRUE(h.add(request(u, kChat, 1), at_ms(0)));
  ASSERT_EQ(h.poll(at_ms(0)).size(), 7u);
  ASSERT_TRUE(h.add(request(20, kChat, 4), at_ms(1)));
  ASSERT_TRUE(h.add(request(21, kChat, 1), at_ms(2)));
  EXPECT_EQ(h.poll(at_ms(3)), (std::vector<uint64_t>{20}));
  Scheduler& s = h.scheduler();
  EXPECT_EQ(s.backend_in_flight(0, 0), 11u);
  EXPECT_TRUE(h.complete(1, at_ms(4)));
  EXPECT_TRUE(h.complete(2, at_ms(4)));
  EXPECT_TRUE(h.complete(3, at_ms(4)));
  EXPECT_TRUE(h.poll(at_ms(4)).empty()) << "8 slots in use: at the limit";
  EXPECT_TRUE(h.complete(4, at_ms(5)));
  EXPECT_EQ(h.poll(at_ms(5)), (std::vector<uint64_t>{21}));
  EXPECT_EQ(s.backend_in_flight(0, 0), 8u);
}

TEST_P(SchedulerSequences, ACancelledOrSupersededRequestGivesBackEverySlot) {
  Harness h(one_pool({chat(), batch()}, {8}, GetParam()));
  ASSERT_TRUE(h.add(Request{.user = 1,
                            .pool = 0,
                            .klass = kChat,
                            .cost_tokens = 100,
                            .supersede_key = "k",
                            .sequences = 3},
                    at_ms(0)));
  ASSERT_TRUE(h.add(request(2, kChat, 5), at_ms(0)));
  ASSERT_EQ(h.poll(at_ms(1)).size(), 2u);
  Scheduler& s = h.scheduler();
  EXPECT_EQ(s.backend_in_flight(0, 0), 8u);
  EXPECT_EQ(s.cancel(h.handle(2)), CancelOutcome::kReleased);
  EXPECT_EQ(s.backend_in_flight(0, 0), 3u);
  // Superseded: its three slots stay held until the upstream is closed.
  const auto next = h.add(Request{.user = 3,
                                  .pool = 0,
                                  .klass = kChat,
                                  .cost_tokens = 100,
                                  .supersede_key = "k",
                                  .sequences = 1},
                          at_ms(2));
  ASSERT_TRUE(next && next->superseded && next->superseded->in_flight);
  EXPECT_EQ(h.poll(at_ms(2)), (std::vector<uint64_t>{3}));
  EXPECT_EQ(s.backend_in_flight(0, 0), 4u);
  EXPECT_TRUE(s.complete(next->superseded->handle, at_ms(3)));
  EXPECT_TRUE(h.complete(3, at_ms(3)));
  EXPECT_EQ(s.backend_in_flight(0, 0), 0u);
  EXPECT_EQ(s.class_in_flight(0, kChat), 0u);
}

INSTANTIATE_TEST_SUITE_P(Policies, SchedulerSequences,
                         ::testing::Values(Policy::kFifo, Policy::kPriority, Policy::kHybrid),
                         [](const auto& info) { return std::string(policy_name(info.param)); });

// A victim running four sequences frees four slots: three waiting chat
// requests need one such victim, not three.
TEST(SchedulerSequencesPreemption, AVictimFreesEverySlotItHeld) {
  Harness h(one_pool({chat(), batch()}, {8}));
  ASSERT_TRUE(h.add(request(1, kBatch, 4), at_ms(0)));
  ASSERT_TRUE(h.add(request(2, kBatch, 4), at_ms(0)));
  ASSERT_EQ(h.poll(at_ms(0)).size(), 2u);
  for (uint64_t u = 10; u < 13; ++u) ASSERT_TRUE(h.add(request(u, kChat, 1), at_ms(1)));
  EXPECT_TRUE(h.poll(at_ms(2)).empty());
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  EXPECT_EQ(h.actions().preemptions.front().user, 2u) << "the most recently started";
  // Until the victim's abort is reported its slots count as coming back:
  // no second victim for the same need.
  EXPECT_TRUE(h.poll(at_ms(3)).empty());
  EXPECT_TRUE(h.actions().preemptions.empty());
  Scheduler& s = h.scheduler();
  ASSERT_TRUE(s.requeue_preempted(h.handle(2), 50, at_ms(4)));
  // The chat requests first; the victim resumes in the one slot left, with
  // its four sequences (background work fills idle capacity).
  EXPECT_EQ(h.poll(at_ms(4)), (std::vector<uint64_t>{10, 11, 12, 2}));
  EXPECT_EQ(s.backend_in_flight(0, 0), 11u);
}

// A lender takes back what its own work can use, in slots: two borrowed
// requests of two sequences each hold its four; two requests of its own need
// one of them back, not both.
TEST(SchedulerSequencesLending, TheLenderTakesBackTheSlotsItsWorkNeeds) {
  ClassPolicy completion = named("completion");
  ClassPolicy lent_chat = chat();
  lent_chat.preemptible = true;
  SchedulerConfig config;
  config.classes = {completion, lent_chat};
  config.pools = {PoolSpec{.name = "m/completion", .max_concurrency = {4}, .lenders = {1}},
                  PoolSpec{.name = "m/chat", .max_concurrency = {4}, .lenders = {0}}};
  Harness h(std::move(config));
  for (uint64_t u = 1; u <= 4; ++u)
    ASSERT_TRUE(h.add(Request{.user = u, .pool = 1, .klass = 1, .cost_tokens = 100}, at_ms(0)));
  for (uint64_t u = 5; u <= 6; ++u) {
    ASSERT_TRUE(h.add(Request{.user = u, .pool = 1, .klass = 1, .cost_tokens = 100, .sequences = 2},
                      at_ms(0)));
  }
  ASSERT_EQ(h.poll(at_ms(0)).size(), 6u);
  Scheduler& s = h.scheduler();
  EXPECT_EQ(s.lent(0), 4u);
  for (uint64_t u = 10; u <= 11; ++u) {
    ASSERT_TRUE(h.add(Request{.user = u, .pool = 0, .klass = 0, .cost_tokens = 100}, at_ms(5)));
  }
  EXPECT_TRUE(h.poll(at_ms(5)).empty());
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  EXPECT_EQ(h.actions().preemptions.front().user, 6u) << "the most recently started";
  ASSERT_TRUE(s.requeue_preempted(h.handle(6), 50, at_ms(6)));
  EXPECT_EQ(h.poll(at_ms(6)), (std::vector<uint64_t>{10, 11}));
  EXPECT_EQ(s.lent(0), 2u);
}

// A tenant cap is in slots: a tenant holding four sequences is at a cap of
// four, and its next request waits while another tenant's starts.
TEST(SchedulerSequencesTenantCap, ATenantsSequencesCountAgainstItsCap) {
  SchedulerConfig config = one_pool({chat(), batch()}, {16});
  config.tenant_max_running = {{1, 4}};
  Harness h(std::move(config));
  ASSERT_TRUE(h.add(request(1, kChat, 4, 1), at_ms(0)));
  ASSERT_TRUE(h.add(request(2, kChat, 1, 1), at_ms(1)));
  ASSERT_TRUE(h.add(request(3, kChat, 1, 2), at_ms(2)));
  EXPECT_EQ(h.poll(at_ms(3)), (std::vector<uint64_t>{1, 3}));
  EXPECT_TRUE(h.complete(1, at_ms(4)));
  EXPECT_EQ(h.poll(at_ms(4)), (std::vector<uint64_t>{2}));
}

// Typing through hands a running generation's slots to its heir: only when
// the heir runs as many sequences.
TEST(SchedulerSequencesInherit, AnHeirRunningOtherSequencesDoesNotInherit) {
  ClassPolicy completion = named("completion");
  completion.typing_through = true;
  Harness h(one_pool({completion}, {8}));
  ASSERT_TRUE(h.add(Request{.user = 1,
                            .pool = 0,
                            .klass = 0,
                            .tenant = 1,
                            .cost_tokens = 100,
                            .supersede_key = "k",
                            .sequences = 2},
                    at_ms(0)));
  ASSERT_EQ(h.poll(at_ms(0)).size(), 1u);
  const auto second = h.add(
      Request{
          .user = 2, .pool = 0, .klass = 0, .tenant = 1, .cost_tokens = 100, .supersede_key = "k"},
      at_ms(5));
  ASSERT_TRUE(second && second->superseded && second->superseded->in_flight);
  EXPECT_FALSE(h.scheduler().inherit(second->handle, second->superseded->handle, at_ms(5)));
}

// Random arrivals, sizes, cancels, supersedes, completions and preemptions:
// every backend's count is the slots of the requests the test saw start
// there and not end, a request starts only on a backend below its limit, and
// everything drains back to zero.
TEST(SchedulerSequencesProperty, SlotCountsFollowTheRequestsAndDrainToZero) {
  for (const Policy policy : {Policy::kFifo, Policy::kPriority, Policy::kHybrid}) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      SCOPED_TRACE(std::string(policy_name(policy)) + " seed " + std::to_string(seed));
      std::mt19937 random(seed);
      const std::vector<uint32_t> limits{8, 5};
      Harness h(one_pool({chat(), batch()}, limits, policy));
      Scheduler& s = h.scheduler();
      struct Running {
        BackendId backend;
        uint32_t slots;
      };
      std::map<uint64_t, Running> running;  // by user
      std::map<uint64_t, uint32_t> sizes;   // every admitted request's sequences
      std::vector<uint32_t> held(limits.size(), 0);
      uint64_t next_user = 1;
      const auto release = [&](uint64_t user) {
        held[running.at(user).backend] -= running.at(user).slots;
        running.erase(user);
      };
      for (int step = 0; step < 400; ++step) {
        const TimePoint now = at_ms(step * 10);
        const uint32_t op = random() % 10;
        if (op < 5) {
          const uint64_t user = next_user++;
          const uint32_t sequences = 1 + random() % 6;
          const ClassId klass = random() % 3 == 0 ? kBatch : kChat;
          const std::string key(1, static_cast<char>('a' + random() % 4));
          const auto admitted = h.add(Request{.user = user,
                                              .pool = 0,
                                              .klass = klass,
                                              .tenant = static_cast<TenantId>(random() % 3),
                                              .cost_tokens = 100,
                                              .supersede_key = random() % 2 ? key : "",
                                              .sequences = sequences},
                                      now);
          if (!admitted) continue;
          sizes[user] = sequences;
          if (admitted->superseded && admitted->superseded->in_flight) {
            // Its slots stay held until its upstream closes: now, here.
            const uint64_t old = admitted->superseded->user;
            EXPECT_TRUE(s.complete(admitted->superseded->handle, now));
            release(old);
          }
        } else if (op < 8 && !running.empty()) {
          auto it = running.begin();
          std::advance(it, random() % running.size());
          const uint64_t user = it->first;
          if (op == 7) {
            EXPECT_EQ(s.cancel(h.handle(user)), CancelOutcome::kReleased);
          } else {
            EXPECT_TRUE(h.complete(user, now));
          }
          release(user);
        }
        // Before the poll: which backends may take new work (a tenant's
        // slots over its fair-share cap do not count against the limit).
        std::vector<uint32_t> before = held;
        for (BackendId b = 0; b < before.size(); ++b) before[b] -= s.backend_over_fair_share(0, b);
        h.poll(now);
        for (const Dispatch& d : h.actions().dispatches) {
          EXPECT_LT(before[d.backend], limits[d.backend]) << "started on a backend at its limit";
          running[d.user] = {d.backend, sizes.at(d.user)};
          held[d.backend] += sizes.at(d.user);
        }
        for (const Preemption& p : h.actions().preemptions) {
          EXPECT_TRUE(s.requeue_preempted(p.handle, 50, now));
          release(p.user);
        }
        for (BackendId b = 0; b < limits.size(); ++b) EXPECT_EQ(s.backend_in_flight(0, b), held[b]);
      }
      // Drain: complete whatever runs until nothing is queued.
      for (int round = 0; round < 10'000 && (s.queued() > 0 || !running.empty()); ++round) {
        while (!running.empty()) {
          EXPECT_TRUE(h.complete(running.begin()->first, at_ms(10'000 + round)));
          release(running.begin()->first);
        }
        h.poll(at_ms(10'000 + round));
        for (const Dispatch& d : h.actions().dispatches) {
          running[d.user] = {d.backend, sizes.at(d.user)};
          held[d.backend] += sizes.at(d.user);
        }
      }
      EXPECT_EQ(s.queued(), 0u);
      EXPECT_EQ(s.in_flight(), 0u);
      for (BackendId b = 0; b < limits.size(); ++b) EXPECT_EQ(s.backend_in_flight(0, b), 0u);
      EXPECT_EQ(s.class_in_flight(0, kChat), 0u);
      EXPECT_EQ(s.class_in_flight(0, kBatch), 0u);
    }
  }
}

}  // namespace
}  // namespace arbiter::sched::scheduler_sequences_test
