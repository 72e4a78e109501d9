// Prefix-affinity routing: the prefix index (what each backend was recently
// sent) and the scheduler's choice of a backend from it, within bounded
// loads, deterministic across gateway replicas.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "core/prefix_blocks.hpp"
#include "core/prefix_index.hpp"
#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

TEST(PrefixBlocks, ChainedOverFullBlocksAndSalted) {
  const std::string a(3 * kPrefixBlockBytes + 10, 'a');
  std::string b = a;
  b[kPrefixBlockBytes + 5] = 'b';  // differs in block 1
  std::vector<uint64_t> ha, hb, hs;
  prefix_blocks(a, 0, ha);
  prefix_blocks(b, 0, hb);
  prefix_blocks(a, 7, hs);
  ASSERT_EQ(ha.size(), 3u);  // the partial block is not hashed
  EXPECT_EQ(ha[0], hb[0]);
  EXPECT_NE(ha[1], hb[1]);
  EXPECT_NE(ha[2], hb[2]);  // chained: equal block 2 text, different prefix
  EXPECT_NE(ha[0], hs[0]);
  prefix_blocks(std::string(kPrefixBlockBytes - 1, 'x'), 0, ha);
  EXPECT_TRUE(ha.empty());
  prefix_blocks(std::string((kMaxPrefixBlocks + 3) * kPrefixBlockBytes, 'x'), 0, ha);
  EXPECT_EQ(ha.size(), kMaxPrefixBlocks);
}

TEST(PrefixIndex, LongestPrefixAndItsHolders) {
  PrefixIndex index({100, 100, 100});
  const std::vector<uint64_t> chain = {11, 12, 13};
  index.record(0, chain);
  index.record(1, std::vector<uint64_t>{11});
  auto m = index.longest(std::vector<uint64_t>{11, 12, 99});
  EXPECT_EQ(m.depth, 2u);
  ASSERT_EQ(m.count, 1u);
  EXPECT_EQ(m.backends[0], 0u);
  m = index.longest(std::vector<uint64_t>{11, 50});
  EXPECT_EQ(m.depth, 1u);
  ASSERT_EQ(m.count, 2u);
  EXPECT_EQ(m.backends[0], 1u);  // the most recent first
  EXPECT_EQ(index.longest(std::vector<uint64_t>{50, 51}).depth, 0u);
  EXPECT_EQ(index.longest({}).depth, 0u);
}

TEST(PrefixIndex, ACapacityReportedLaterCountsThatManyBlocks) {
  // A backend first assumed to hold 2 blocks reports a cache of 6: what was
  // recorded there is held as far back as 6 blocks, not 2.
  PrefixIndex index({2});
  index.record(0, std::vector<uint64_t>{1, 2});
  index.record(0, std::vector<uint64_t>{10, 11});
  EXPECT_EQ(index.longest(std::vector<uint64_t>{1, 2}).depth, 0u);  // pushed out by the later two
  index.set_capacity(0, 6);
  EXPECT_EQ(index.capacity(0), 6u);
  EXPECT_EQ(index.longest(std::vector<uint64_t>{1, 2}).depth, 2u);
  EXPECT_EQ(index.longest(std::vector<uint64_t>{10, 11}).depth, 2u);
  index.set_capacity(0, 0);  // a cache of nothing: nothing held
  EXPECT_FALSE(index.enabled());
  EXPECT_EQ(index.longest(std::vector<uint64_t>{10, 11}).depth, 0u);
}

TEST(PrefixIndex, EvictsLeastRecentlyRecordedAndStaysPrefixClosed) {
  PrefixIndex index({4});
  index.record(0, std::vector<uint64_t>{1, 2, 3});
  index.record(0, std::vector<uint64_t>{7, 8, 9});
  // Six blocks recorded into four: the first prompt keeps only its first
  // block (recorded last of the three), never a later one without it.
  EXPECT_EQ(index.longest(std::vector<uint64_t>{1, 2, 3}).depth, 1u);
  EXPECT_EQ(index.longest(std::vector<uint64_t>{7, 8, 9}).depth, 3u);
  index.forget(0);
  EXPECT_EQ(index.longest(std::vector<uint64_t>{7, 8, 9}).depth, 0u);
  index.record(0, std::vector<uint64_t>{7});
  EXPECT_EQ(index.longest(std::vector<uint64_t>{7, 8, 9}).depth, 1u);
}

TEST(PrefixIndex, MemoryIsBoundedByTheCapacities) {
  PrefixIndex index({10, 10});
  for (uint64_t i = 0; i < 100'000; ++i) index.record(i % 2, std::vector<uint64_t>{i * 7919 + 1});
  EXPECT_LE(index.entries(), 2u * 20 + 1024 + 1);
  EXPECT_EQ(index.longest(std::vector<uint64_t>{99'999 * 7919 + 1}).depth, 1u);
}

// A pool of `backends` x 64 slots with prefix caches, one class.
SchedulerConfig affinity_pool(uint32_t backends, uint64_t cache_tokens = 1'000'000) {
  SchedulerConfig config = one_pool({named("c")}, std::vector<uint32_t>(backends, 64));
  config.pools[0].prefix_cache_tokens = std::vector<uint64_t>(backends, cache_tokens);
  return config;
}

// Enqueues `user` with `blocks` and polls: its dispatch.
Dispatch dispatch_of(Harness& h, uint64_t user, const std::vector<uint64_t>& blocks, int64_t ms) {
  const auto admitted =
      h.add(Request{.user = user, .pool = 0, .klass = 0, .tenant = 0, .cost_tokens = 10, .prefix_blocks = blocks},
            at_ms(ms));
  EXPECT_TRUE(admitted.has_value());
  Actions actions;
  h.scheduler().poll(at_ms(ms), actions);
  EXPECT_EQ(actions.dispatches.size(), 1u);
  return actions.dispatches.empty() ? Dispatch{.backend = UINT32_MAX} : actions.dispatches.front();
}

// The backend it started on.
uint32_t place(Harness& h, uint64_t user, const std::vector<uint64_t>& blocks, int64_t ms) {
  return dispatch_of(h, user, blocks, ms).backend;
}

TEST(SchedulerAffinity, EachDispatchSaysWhyItWentWhere) {
  Harness h(affinity_pool(4));
  const Dispatch first = dispatch_of(h, 1, {100, 101}, 0);
  EXPECT_EQ(first.placement, Placement::kPrefixNew);
  const Dispatch again = dispatch_of(h, 2, {100, 101, 102}, 1);
  EXPECT_EQ(again.backend, first.backend);
  EXPECT_EQ(again.placement, Placement::kPrefixHeld);
  EXPECT_EQ(again.prefix_blocks, 2u);  // what the backend held of its three
  EXPECT_EQ(dispatch_of(h, 3, {}, 2).placement, Placement::kLeastLoaded);  // no prefix to follow
  Harness plain(one_pool({named("c")}, std::vector<uint32_t>(4, 64)));
  EXPECT_EQ(dispatch_of(plain, 1, {100, 101}, 0).placement, Placement::kLeastLoaded);  // affinity off
  // One hot prefix past the load bound everywhere it is held: placed by room.
  Harness hot(affinity_pool(4));
  int over_bound = 0, held = 0;
  for (uint64_t i = 0; i < 128; ++i) {
    const Dispatch d = dispatch_of(hot, i, {7, 8}, 0);
    over_bound += d.placement == Placement::kOverBound || d.placement == Placement::kPrefixNew;
    held += d.placement == Placement::kPrefixHeld;
  }
  EXPECT_GT(held, 0);
  EXPECT_GT(over_bound, 0);
}

TEST(SchedulerAffinity, ARequestFollowsItsPrefixWhileLoadAllows) {
  Harness h(affinity_pool(4));
  // Three requests of other prompts, then a chain and its extension: the
  // extension goes where the chain went, not to the least loaded backend.
  const std::vector<uint64_t> chain = {100, 101}, longer = {100, 101, 102};
  const uint32_t home = place(h, 1, chain, 0);
  const uint32_t again = place(h, 2, longer, 1);
  EXPECT_EQ(again, home);
  // Without prefix caches, least loaded: the second goes elsewhere.
  Harness plain(one_pool({named("c")}, std::vector<uint32_t>(4, 64)));
  EXPECT_NE(place(plain, 1, chain, 0), place(plain, 2, longer, 1));
}

TEST(SchedulerAffinity, OneHotPrefixDoesNotPileOntoOneBackend) {
  // 128 running requests with the same prefix on 4 x 64 slots: the bound
  // spreads them. No backend holds more than (1 + 0.25) x the average share
  // plus an eighth of its slots: (1.25 x 128 / 256 + 0.125) x 64 = 48.
  Harness h(affinity_pool(4));
  std::map<uint32_t, int> per_backend;
  const std::vector<uint64_t> hot = {7, 8};
  for (uint64_t i = 0; i < 128; ++i) ++per_backend[place(h, i, hot, 0)];
  EXPECT_GE(per_backend.size(), 3u);
  for (const auto& [backend, n] : per_backend) EXPECT_LE(n, 48) << "backend " << backend;
  // Affinity still shows: the hot prefix's backends are fewer than all or
  // fuller than an even split (32 each).
  int most = 0;
  for (const auto& [backend, n] : per_backend) most = std::max(most, n);
  EXPECT_GT(most, 32);
}

TEST(SchedulerAffinity, ReplicasAgreeWhereANewPrefixGoes) {
  // Three gateway replicas, each with its own scheduler and index, in front
  // of the same 8 backends, share a stream of prompts (typing sessions and
  // chats: a prefix per session, extended request by request). Each request
  // lands on one replica at random; every one completes before the next, so
  // load allows. A session's requests must all reach the same backend,
  // whichever replica routes them.
  std::vector<Harness> replicas;
  for (int i = 0; i < 3; ++i) replicas.emplace_back(affinity_pool(8));
  std::mt19937_64 rng(5);
  std::map<uint64_t, uint32_t> home;  // session -> backend of its first request
  int agreed = 0, total = 0;
  std::vector<std::vector<uint64_t>> prompts;
  for (uint64_t user = 1; user <= 3'000; ++user) {
    const uint64_t session = rng() % 200;
    std::vector<uint64_t> blocks;
    for (uint64_t k = 0, depth = 1 + rng() % 6; k < depth; ++k) blocks.push_back(session * 1000 + k + 1);
    Harness& r = replicas[rng() % 3];
    const uint32_t backend = place(r, user, blocks, static_cast<int64_t>(user));
    r.complete(user, at_ms(static_cast<int64_t>(user)));
    const auto [it, first] = home.emplace(session, backend);
    if (!first) {
      ++total;
      agreed += it->second == backend;
    }
  }
  EXPECT_GE(agreed, total * 99 / 100) << agreed << " of " << total;
  // And the sessions are spread: no backend is home to more than twice its share.
  std::map<uint32_t, int> homes;
  for (const auto& [session, backend] : home) ++homes[backend];
  for (const auto& [backend, n] : homes) EXPECT_LE(n, 2 * 200 / 8) << "backend " << backend;
}

TEST(SchedulerAffinity, LoadOtherReplicasPutOnAnEngineCounts) {
  // The engine holding the prefix reports 60 requests running (other gateway
  // replicas' work this one does not see): past the bound, so the request
  // goes elsewhere; with the count stale, this replica's own view decides.
  const std::vector<uint64_t> chain = {70, 71};
  for (const bool stale : {false, true}) {
    Harness h(affinity_pool(2));
    const uint32_t home = place(h, 1, chain, 0);
    h.complete(1, at_ms(0));
    // Only a new verdict (here: stale) is reported as one; a running count
    // alone is not (the gateway polls on verdicts only).
    EXPECT_EQ(h.scheduler().set_backend_state(0, home, BackendSignal{.stale = stale, .engine_running = 60}),
              stale);
    EXPECT_EQ(place(h, 2, chain, 1) == home, stale) << "stale " << stale;
  }
}

TEST(SchedulerAffinity, ABackendThatWentDownLosesItsPrefixes) {
  const std::vector<uint64_t> chain = {40, 41};
  Harness probe(affinity_pool(2));
  const uint32_t winner = place(probe, 1, chain, 0);  // the chain's rendezvous choice
  const uint32_t other = 1 - winner;
  // With the rendezvous choice down, the chain is first sent to the other
  // backend, and stays there once both are up.
  Harness h(affinity_pool(2));
  h.scheduler().set_backend_state(0, winner, BackendSignal{.down = true});
  EXPECT_EQ(place(h, 1, chain, 0), other);
  h.complete(1, at_ms(0));
  h.scheduler().set_backend_state(0, winner, BackendSignal{});
  EXPECT_EQ(place(h, 2, chain, 1), other);
  h.complete(2, at_ms(1));
  // The other backend goes down and comes back: its cache is gone, so the
  // chain is placed by rendezvous again.
  h.scheduler().set_backend_state(0, other, BackendSignal{.down = true});
  h.scheduler().set_backend_state(0, other, BackendSignal{});
  EXPECT_EQ(place(h, 3, chain, 2), winner);
}

}  // namespace
}  // namespace arbiter::sched
