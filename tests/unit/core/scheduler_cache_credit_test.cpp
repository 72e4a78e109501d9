// Prefix cache credit (SchedulerConfig::affinity_cache_credit, issue 12): a
// backend holding a request's prefix counts only the rest of the prompt in
// its prefill backlog once what it was sent is prefilled, and a holder whose
// engine reads saturated still takes the prefix it holds.
#include <gtest/gtest.h>

#include <vector>

#include "core/prefix_blocks.hpp"
#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using namespace std::chrono_literals;
using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

// `backends` x 64 slots with prefix caches; each prefills 1000 tokens/s and
// takes new work while less than `backlog` of prefill is queued there.
SchedulerConfig credit_pool(uint32_t backends, bool credit, Duration backlog = 250ms) {
  SchedulerConfig config = one_pool({named("c")}, std::vector<uint32_t>(backends, 64));
  config.pools[0].prefix_cache_tokens = std::vector<uint64_t>(backends, 1'000'000);
  config.pools[0].prefill_tokens_per_s = std::vector<double>(backends, 1000);
  config.max_prefill_backlog = backlog;
  config.affinity_cache_credit = credit;
  return config;
}

std::vector<uint64_t> blocks(uint64_t first, uint32_t count) {
  std::vector<uint64_t> out;
  for (uint32_t i = 0; i < count; ++i) out.push_back(first + i);
  return out;
}

// Enqueues `user` with a `prompt`-token prompt and `prefix` blocks (kept
// alive by the caller: the scheduler reads them in place).
void add(Harness& h, uint64_t user, int64_t prompt, const std::vector<uint64_t>& prefix, int64_t ms) {
  ASSERT_TRUE(h.add(Request{.user = user,
                            .pool = 0,
                            .klass = 0,
                            .tenant = 0,
                            .cost_tokens = prompt + 10,
                            .prompt_tokens = prompt,
                            .prefix_blocks = prefix},
                    at_ms(ms))
                  .has_value());
}

TEST(SchedulerCacheCredit, APrefilledPrefixLeavesBacklogRoomForTheNextRequest) {
  // A 1,920-token file (15 blocks) is prefilled on the only backend (first
  // token reported). Its next keystroke, 2,000 tokens of which the backend
  // holds 1,920, adds 80 tokens of backlog with credit: a third request of
  // 100 tokens still fits under 250. Without credit, 2,000 tokens: it waits.
  const std::vector<uint64_t> file = blocks(100, 15), other = blocks(900, 1);
  for (const bool credit : {true, false}) {
    Harness h(credit_pool(1, credit));
    add(h, 1, 1920, file, 0);
    EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
    EXPECT_TRUE(h.scheduler().first_token(h.handle(1), at_ms(10)));
    add(h, 2, 2000, file, 10);
    EXPECT_EQ(h.poll(at_ms(10)), (std::vector<uint64_t>{2}));
    add(h, 3, 100, other, 10);
    EXPECT_EQ(h.poll(at_ms(10)).size(), credit ? 1u : 0u) << "credit " << credit;
  }
}

TEST(SchedulerCacheCredit, NoCreditWhileTheHolderIsStillPrefilling) {
  // The same keystrokes, but the file's first request has no first token
  // yet: the engine has not cached the file, so the keystroke costs its
  // whole prompt (the engine would compute the file twice) and the third
  // request waits even with credit on. 2,500 ms of backlog allowed.
  const std::vector<uint64_t> file = blocks(100, 15), other = blocks(900, 1);
  Harness h(credit_pool(1, true, 2500ms));
  add(h, 1, 1920, file, 0);
  add(h, 2, 2000, file, 0);
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1, 2}));  // 1,920 then 3,920 queued
  add(h, 3, 100, other, 0);
  EXPECT_TRUE(h.poll(at_ms(0)).empty());
}

// Sends `chain` (600 tokens) at 0 ms and completes it at 5 s: its backend.
uint32_t home_of(Harness& h, const std::vector<uint64_t>& chain) {
  add(h, 1, 600, chain, 0);
  EXPECT_EQ(h.poll(at_ms(0)).size(), 1u);
  const uint32_t home = h.actions().dispatches.front().backend;
  h.complete(1, at_ms(5000));
  return home;
}

// The backend the chain's next request (user 2, at 5 s) starts on once
// its home backend reports `signal`.
uint32_t next_after(Harness& h, const std::vector<uint64_t>& chain, uint32_t home, BackendSignal signal) {
  h.scheduler().set_backend_state(0, home, signal);
  add(h, 2, 620, chain, 5000);
  EXPECT_EQ(h.poll(at_ms(5000)).size(), 1u);
  return h.actions().dispatches.front().backend;
}

TEST(SchedulerCacheCredit, ASaturatedHolderKeepsItsPrefix) {
  // Two backends; the chain's backend then reads saturated (a request
  // waiting for its engine's next step). With credit the chain's next
  // request still goes there; without, to the cold one. A holder that is
  // down is never chosen.
  const std::vector<uint64_t> chain = blocks(40, 4);
  for (const bool credit : {true, false}) {
    Harness h(credit_pool(2, credit));
    const uint32_t home = home_of(h, chain);
    EXPECT_EQ(next_after(h, chain, home, BackendSignal{.saturated = true}) == home, credit) << "credit " << credit;
  }
  Harness down(credit_pool(2, true));
  const uint32_t home = home_of(down, chain);
  EXPECT_NE(next_after(down, chain, home, BackendSignal{.down = true}), home);
}

TEST(SchedulerCacheCredit, ASaturatedHolderWithAFullBacklogIsStillPassedOver) {
  // The chain's holder is sent the chain plus one block: 400 tokens it does
  // not hold, over the 250 ms (250 tokens) of backlog allowed. Saturated
  // too, it is passed over: the chain's next request goes to the other one.
  const std::vector<uint64_t> chain = blocks(40, 4), longer = blocks(40, 5);
  Harness h(credit_pool(2, true));
  const uint32_t home = home_of(h, chain);
  add(h, 3, 400 + 4 * static_cast<int64_t>(kPrefixBlockTokens), longer, 5000);
  ASSERT_EQ(h.poll(at_ms(5000)).size(), 1u);
  ASSERT_EQ(h.actions().dispatches.front().backend, home);
  EXPECT_NE(next_after(h, chain, home, BackendSignal{.saturated = true}), home);
}

}  // namespace
}  // namespace arbiter::sched
