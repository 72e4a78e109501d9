// Borrowing between pools (PoolSpec::lenders): a pool's requests take a
// lender's idle slots when their own pool is full, and the lender takes
// them back when its own work arrives.
#include <gtest/gtest.h>

#include "scheduler_test_util.hpp"

namespace arbiter::sched::scheduler_lending_test {
namespace {

using namespace std::chrono_literals;
using testing::at_ms;
using testing::named;

constexpr ClassId kCompletion = 0;
constexpr ClassId kChat = 1;
constexpr PoolId kCompletionPool = 0;
constexpr PoolId kChatPool = 1;

// The BRIEF's deployment in miniature: a completion pool and a chat pool of
// one model, one backend each with `slots` slots, each lending to the other.
// Completion has a 200 ms TTFT SLO (at risk, and so allowed to borrow,
// after 100 ms); chat is preemptible (it may borrow at once: the lender
// can take it back).
SchedulerConfig two_pools(uint32_t slots, bool chat_preemptible = true) {
  SchedulerConfig config;
  ClassPolicy completion = named("completion");
  completion.ttft_slo = 200ms;
  ClassPolicy chat = named("chat");
  chat.preemptible = chat_preemptible;
  config.classes = {completion, chat};
  config.pools = {PoolSpec{.name = "m/completion", .max_concurrency = {slots}, .lenders = {kChatPool}},
                  PoolSpec{.name = "m/chat", .max_concurrency = {slots}, .lenders = {kCompletionPool}}};
  return config;
}

// Enqueues and polls; returns the dispatches of that poll.
class Pools {
 public:
  explicit Pools(SchedulerConfig config) : s_(*Scheduler::create(std::move(config))) {}

  Handle add(uint64_t user, PoolId pool, ClassId klass, TimePoint now, int64_t prompt = 0) {
    auto admitted = s_.enqueue({.user = user, .pool = pool, .klass = klass, .tenant = 0,
                                .cost_tokens = 100, .prompt_tokens = prompt},
                               now);
    EXPECT_TRUE(admitted.has_value());
    return admitted ? admitted->handle : Handle{};
  }
  const Actions& poll(TimePoint now) {
    actions_.clear();
    s_.poll(now, actions_);
    return actions_;
  }
  Scheduler& s() { return s_; }

 private:
  Scheduler s_;
  Actions actions_;
};

TEST(Lending, FullPoolBorrowsAnIdleLendersSlotToSaveAnSlo) {
  Pools p(two_pools(1));
  p.add(1, kCompletionPool, kCompletion, at_ms(0));
  p.add(2, kCompletionPool, kCompletion, at_ms(0));
  ASSERT_EQ(p.poll(at_ms(0)).dispatches.size(), 1u);  // its own pool first
  EXPECT_EQ(p.s().next_wakeup(), at_ms(100));          // when it may borrow
  EXPECT_TRUE(p.poll(at_ms(99)).dispatches.empty());   // a short wait at home beats a cold cache
  const Actions& a = p.poll(at_ms(100));               // half its SLO gone: borrow
  ASSERT_EQ(a.dispatches.size(), 1u);
  EXPECT_EQ(a.dispatches[0].user, 2u);
  EXPECT_EQ(a.dispatches[0].pool, kChatPool);
  EXPECT_EQ(p.s().class_in_flight(kCompletionPool, kCompletion), 2u);
  EXPECT_EQ(p.s().class_borrowed(kCompletionPool, kCompletion), 1u);
  EXPECT_EQ(p.s().lent(kChatPool), 1u);
  EXPECT_EQ(p.s().backend_in_flight(kChatPool, 0), 1u);
  EXPECT_EQ(p.s().counters().classes[kCompletion].borrowed, 1u);

  // Its end frees the lender's slot.
  EXPECT_TRUE(p.s().complete(a.dispatches[0].handle, at_ms(110)));
  EXPECT_EQ(p.s().lent(kChatPool), 0u);
  EXPECT_EQ(p.s().backend_in_flight(kChatPool, 0), 0u);
  EXPECT_EQ(p.s().class_borrowed(kCompletionPool, kCompletion), 0u);
}

TEST(Lending, NoLoanWithoutALenderOrWhileTheLenderHasWorkWaiting) {
  SchedulerConfig config = two_pools(1);
  config.pools[kCompletionPool].lenders.clear();
  Pools alone(config);
  alone.add(1, kCompletionPool, kCompletion, at_ms(0));
  alone.add(2, kCompletionPool, kCompletion, at_ms(0));
  EXPECT_EQ(alone.poll(at_ms(0)).dispatches.size(), 1u);
  EXPECT_TRUE(alone.poll(at_ms(150)).dispatches.empty());

  // The chat pool (borrowing from nobody here) is full and has chat
  // waiting: it lends nothing.
  config = two_pools(1);
  config.pools[kChatPool].lenders.clear();
  Pools p(config);
  p.add(1, kChatPool, kChat, at_ms(0));
  p.add(2, kChatPool, kChat, at_ms(0));
  ASSERT_EQ(p.poll(at_ms(0)).dispatches.size(), 1u);
  p.add(3, kCompletionPool, kCompletion, at_ms(1));
  p.add(4, kCompletionPool, kCompletion, at_ms(1));
  const Actions& a = p.poll(at_ms(1));
  ASSERT_EQ(a.dispatches.size(), 1u);
  EXPECT_EQ(a.dispatches[0].user, 3u);
  EXPECT_TRUE(p.poll(at_ms(150)).dispatches.empty());  // at risk, but the lender has work waiting
  EXPECT_EQ(p.s().lent(kChatPool), 0u);
}

TEST(Lending, WorkTheLenderCannotTakeBackBorrowsOnlyToSaveItsSlo) {
  SchedulerConfig config = two_pools(1, /*chat_preemptible=*/false);
  Pools p(config);
  p.add(1, kChatPool, kChat, at_ms(0));
  p.add(2, kChatPool, kChat, at_ms(0));
  ASSERT_EQ(p.poll(at_ms(0)).dispatches.size(), 1u);
  EXPECT_TRUE(p.poll(at_ms(60'000)).dispatches.empty());  // no SLO to save: it waits at home
  // The same chat, preemptible, borrows at once; under fifo (no
  // preemption, so no taking back) it does not.
  config.classes[kChat].preemptible = true;
  for (const Policy policy : {Policy::kHybrid, Policy::kFifo}) {
    config.policy = policy;
    Pools q(config);
    q.add(1, kChatPool, kChat, at_ms(0));
    q.add(2, kChatPool, kChat, at_ms(0));
    EXPECT_EQ(q.poll(at_ms(0)).dispatches.size(), policy == Policy::kHybrid ? 2u : 1u) << policy_name(policy);
  }
}

TEST(Lending, TheLenderTakesItsSlotBackAtOnce) {
  // preempt_after is 1 s, but a lent slot comes back in the same poll that
  // sees the lender's own work waiting: the borrowed chat is preempted.
  SchedulerConfig config = two_pools(1);
  config.preempt_after = 1s;
  Pools p(config);
  p.add(1, kChatPool, kChat, at_ms(0));
  p.add(2, kChatPool, kChat, at_ms(0));
  const Actions& first = p.poll(at_ms(0));
  ASSERT_EQ(first.dispatches.size(), 2u);
  ASSERT_EQ(first.dispatches[1].pool, kCompletionPool);  // chat borrowed the completion slot
  const Handle borrowed = first.dispatches[1].handle;

  p.add(3, kCompletionPool, kCompletion, at_ms(5));
  const Actions& a = p.poll(at_ms(5));
  EXPECT_TRUE(a.dispatches.empty());
  ASSERT_EQ(a.preemptions.size(), 1u);
  EXPECT_EQ(a.preemptions[0].handle, borrowed);
  EXPECT_EQ(a.preemptions[0].pool, kCompletionPool);  // where it runs
  EXPECT_EQ(p.s().counters().classes[kChat].reclaimed, 1u);

  // Aborted upstream: the completion gets its slot; the chat waits at home
  // (the completion pool has nothing left to lend).
  EXPECT_TRUE(p.s().requeue_preempted(borrowed, 50, at_ms(6)));
  const Actions& b = p.poll(at_ms(6));
  ASSERT_EQ(b.dispatches.size(), 1u);
  EXPECT_EQ(b.dispatches[0].user, 3u);
  EXPECT_EQ(b.dispatches[0].pool, kCompletionPool);
  EXPECT_EQ(p.s().queue_depth(kChatPool, kChat), 1u);
  EXPECT_EQ(p.s().lent(kCompletionPool), 0u);
}

TEST(Lending, ARequestInsideItsThrashGuardDoesNotBorrow) {
  // The chat taken back above may not be preempted again for preempt_guard
  // (10 s): lent to it within that time, the slot could not come back when
  // the lender's work arrives. It waits at home until the guard has passed.
  Pools p(two_pools(1));
  p.add(1, kChatPool, kChat, at_ms(0));
  p.add(2, kChatPool, kChat, at_ms(0));
  const Handle borrowed = p.poll(at_ms(0)).dispatches.at(1).handle;
  const Handle completion = p.add(3, kCompletionPool, kCompletion, at_ms(5));
  ASSERT_EQ(p.poll(at_ms(5)).preemptions.size(), 1u);
  ASSERT_TRUE(p.s().requeue_preempted(borrowed, 50, at_ms(6)));
  ASSERT_EQ(p.poll(at_ms(6)).dispatches.size(), 1u);  // the completion
  ASSERT_TRUE(p.s().complete(completion, at_ms(50)));

  EXPECT_TRUE(p.poll(at_ms(50)).dispatches.empty()) << "the completion slot is idle, but not lent";
  EXPECT_EQ(p.s().next_wakeup(), at_ms(6 + 10'000)) << "a poll when the guard ends";
  EXPECT_TRUE(p.poll(at_ms(6 + 9'999)).dispatches.empty());
  const Actions& a = p.poll(at_ms(6 + 10'000));
  ASSERT_EQ(a.dispatches.size(), 1u);
  EXPECT_EQ(a.dispatches[0].handle, borrowed);
  EXPECT_EQ(a.dispatches[0].pool, kCompletionPool);
  EXPECT_GT(a.dispatches[0].preemptions, 0u);
}

TEST(Lending, NonPreemptibleBorrowedWorkKeepsItsSlotUntilItEnds) {
  Pools p(two_pools(1));
  // A completion borrows the chat slot to save its SLO; chat then arrives.
  p.add(1, kCompletionPool, kCompletion, at_ms(0));
  p.add(2, kCompletionPool, kCompletion, at_ms(0));
  ASSERT_EQ(p.poll(at_ms(0)).dispatches.size(), 1u);
  const Actions& first = p.poll(at_ms(100));
  ASSERT_EQ(first.dispatches.size(), 1u);
  const Handle borrowed = first.dispatches[0].handle;
  p.add(3, kChatPool, kChat, at_ms(105));
  const Actions& a = p.poll(at_ms(105));
  EXPECT_TRUE(a.preemptions.empty());
  EXPECT_TRUE(a.dispatches.empty());
  EXPECT_TRUE(p.s().complete(borrowed, at_ms(150)));
  const Actions& b = p.poll(at_ms(150));
  ASSERT_EQ(b.dispatches.size(), 1u);
  EXPECT_EQ(b.dispatches[0].user, 3u);
}

TEST(Lending, SharesAtHomeCountOnlyHomeSlots) {
  // Completion is guaranteed half of its 2-slot pool, which also serves a
  // second class here. With both its running requests on the lender's
  // slots it holds none at home, so the next free home slot is its by the
  // guarantee, although the other class is ahead in the weighted order.
  SchedulerConfig config = two_pools(2);
  config.classes[kCompletion].min_share = 0.5;
  Pools p(config);
  p.add(1, kCompletionPool, kChat, at_ms(0));
  ASSERT_EQ(p.poll(at_ms(0)).dispatches.size(), 1u);
  for (uint64_t u = 2; u <= 4; ++u) p.add(u, kCompletionPool, kCompletion, at_ms(1));
  const Actions& home = p.poll(at_ms(1));
  ASSERT_EQ(home.dispatches.size(), 1u);
  const Handle at_home = home.dispatches[0].handle;
  const Actions& a = p.poll(at_ms(101));
  ASSERT_EQ(a.dispatches.size(), 2u);
  EXPECT_EQ(a.dispatches[0].pool, kChatPool);
  EXPECT_EQ(a.dispatches[1].pool, kChatPool);
  EXPECT_TRUE(p.s().complete(at_home, at_ms(102)));
  EXPECT_EQ(p.s().class_in_flight(kCompletionPool, kCompletion), 2u);
  EXPECT_EQ(p.s().class_borrowed(kCompletionPool, kCompletion), 2u);

  p.add(5, kCompletionPool, kChat, at_ms(103));
  p.add(6, kCompletionPool, kCompletion, at_ms(104));
  const Actions& b = p.poll(at_ms(104));
  ASSERT_EQ(b.dispatches.size(), 1u);
  EXPECT_EQ(b.dispatches[0].user, 6u);
}

TEST(Lending, BorrowersUseHalfTheLendersPrefillBacklog) {
  // The chat backend prefills 1000 tokens/s with a 250 ms backlog limit:
  // 250 tokens. Borrowed work is its lowest tier: 125 tokens.
  SchedulerConfig config = two_pools(8);
  config.pools[kChatPool].prefill_tokens_per_s = {1000};
  Pools p(config);
  for (uint64_t u = 1; u <= 8; ++u) p.add(u, kCompletionPool, kCompletion, at_ms(0), 10);
  ASSERT_EQ(p.poll(at_ms(0)).dispatches.size(), 8u);  // the own pool is full
  for (uint64_t u = 9; u <= 11; ++u) p.add(u, kCompletionPool, kCompletion, at_ms(0), 60);
  // At risk at 100 ms: 0 + 60 and 60 + 60 tokens fit in 125; 120 + 60 does
  // not (the borrower's own prompt counts).
  EXPECT_EQ(p.poll(at_ms(100)).dispatches.size(), 2u);
  EXPECT_EQ(p.s().lent(kChatPool), 2u);
}

TEST(Lending, ConfigErrorsNameThePool) {
  SchedulerConfig config = two_pools(1);
  config.pools[0].lenders = {0};
  EXPECT_EQ(validate(config), "pool 'm/completion': a pool cannot lend to itself");
  config.pools[0].lenders = {7};
  EXPECT_EQ(validate(config), "pool 'm/completion': lender is not a pool");
  config.pools[0].lenders = {1, 1};
  EXPECT_EQ(validate(config), "pool 'm/completion': lender 'm/chat' named twice");
}

}  // namespace
}  // namespace arbiter::sched::scheduler_lending_test
