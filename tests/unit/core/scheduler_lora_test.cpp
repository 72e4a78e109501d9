// LoRA-aware routing: a request for an adapter runs only where the adapter
// is served, goes where it is loaded (within the load bound), else where an
// adapter slot is free, and a request whose backends are full does not hold
// up other tenants' work.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

SchedulerConfig lora_pool(std::vector<uint32_t> slots, std::vector<std::vector<uint16_t>> adapters,
                          std::vector<uint32_t> max_loras = {}) {
  SchedulerConfig config = one_pool({named("chat")}, std::move(slots));
  config.pools[0].adapters = std::move(adapters);
  config.pools[0].max_loras = std::move(max_loras);
  return config;
}

Request lora(uint64_t user, uint16_t adapter, TenantId tenant = 0) {
  return Request{.user = user, .pool = 0, .klass = 0, .tenant = tenant, .cost_tokens = 100, .adapter = adapter};
}

// Backend and placement of each dispatch of the last poll, by caller tag.
std::map<uint64_t, std::pair<BackendId, Placement>> placed(const Harness& h) {
  std::map<uint64_t, std::pair<BackendId, Placement>> out;
  for (const Dispatch& d : h.actions().dispatches) out[d.user] = {d.backend, d.placement};
  return out;
}

TEST(SchedulerLora, AdapterRequestsNeverReachABackendWithoutTheAdapter) {
  // Randomised: three backends serving different adapter sets, requests for
  // every adapter and the base model, completions in random order. Every
  // dispatch of an adapter request lands on a backend that serves it, and
  // everything is served in the end.
  const std::vector<std::vector<uint16_t>> serves = {{1, 2}, {2, 3}, {}};
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    Harness h(lora_pool({3, 2, 4}, serves, {1, 2, 1}));
    std::vector<uint64_t> running;
    std::map<uint64_t, uint16_t> adapter_of;
    uint64_t next = 1, started = 0;
    const uint64_t total = 300;
    for (int64_t t = 0; started < total && t < 100'000; ++t) {
      if (next <= total && rng() % 2 == 0) {
        const auto adapter = static_cast<uint16_t>(rng() % 4);  // 0: the base model
        adapter_of[next] = adapter;
        ASSERT_TRUE(h.add(lora(next++, adapter, static_cast<TenantId>(rng() % 3)), at_ms(t)));
      }
      h.poll(at_ms(t));
      for (const Dispatch& d : h.actions().dispatches) {
        const uint16_t adapter = adapter_of.at(d.user);
        if (adapter != 0) {
          ASSERT_TRUE(std::count(serves[d.backend].begin(), serves[d.backend].end(), adapter))
              << "seed " << seed << ": adapter " << adapter << " on backend " << d.backend;
        }
        ++started;
        running.push_back(d.user);
      }
      if (!running.empty() && rng() % 3 == 0) {
        const std::size_t k = rng() % running.size();
        ASSERT_TRUE(h.complete(running[k], at_ms(t)));
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    EXPECT_EQ(started, total) << "seed " << seed;
  }
}

TEST(SchedulerLora, EveryDispatchServesItsAdapter) {
  const std::vector<std::vector<uint16_t>> serves = {{1}, {2}, {}};
  Harness h(lora_pool({4, 4, 4}, serves));
  std::map<uint64_t, uint16_t> adapter_of;
  for (uint64_t u = 1; u <= 9; ++u) {
    adapter_of[u] = static_cast<uint16_t>(u % 3);
    ASSERT_TRUE(h.add(lora(u, adapter_of[u]), at_ms(0)));
  }
  h.poll(at_ms(0));
  ASSERT_EQ(h.actions().dispatches.size(), 9u);
  for (const Dispatch& d : h.actions().dispatches) {
    if (adapter_of[d.user] == 1) {
      EXPECT_EQ(d.backend, 0u) << d.user;
    }
    if (adapter_of[d.user] == 2) {
      EXPECT_EQ(d.backend, 1u) << d.user;
    }
  }
}

TEST(SchedulerLora, LoadedAdapterIsFollowedAndANewOneTakesAFreeSlot) {
  // Two backends serving both adapters, one adapter slot each (vLLM's
  // default): each adapter settles on a backend of its own.
  Harness h(lora_pool({8, 8}, {{1, 2}, {1, 2}}));
  ASSERT_TRUE(h.add(lora(1, 1), at_ms(0)));
  h.poll(at_ms(0));
  const BackendId first = placed(h).at(1).first;
  EXPECT_EQ(placed(h).at(1).second, Placement::kAdapterLoad);
  ASSERT_TRUE(h.add(lora(2, 2), at_ms(1)));
  h.poll(at_ms(1));
  EXPECT_NE(placed(h).at(2).first, first);  // the other backend's slot is free
  EXPECT_EQ(placed(h).at(2).second, Placement::kAdapterLoad);
  for (uint64_t u = 3; u <= 6; ++u) {
    ASSERT_TRUE(h.add(lora(u, u % 2 == 1 ? 1 : 2), at_ms(2)));
  }
  h.poll(at_ms(2));
  for (const auto& [user, where] : placed(h)) {
    EXPECT_EQ(where.first, user % 2 == 1 ? first : 1 - first) << user;
    EXPECT_EQ(where.second, Placement::kAdapterLoaded) << user;
  }
}

TEST(SchedulerLora, WithoutAffinityTheLeastLoadedTakesIt) {
  SchedulerConfig config = lora_pool({8, 8}, {{1, 2}, {1, 2}});
  config.lora_affinity = false;
  Harness h(std::move(config));
  for (uint64_t u = 1; u <= 4; ++u) ASSERT_TRUE(h.add(lora(u, 1), at_ms(0)));
  h.poll(at_ms(0));
  uint32_t on_first = 0;
  for (const auto& [user, where] : placed(h)) {
    on_first += where.first == 0 ? 1 : 0;
    EXPECT_EQ(where.second, Placement::kLeastLoaded);
  }
  EXPECT_EQ(on_first, 2u);  // spread evenly: the adapter is loaded on both
}

TEST(SchedulerLora, AHotAdapterSpreadsPastTheLoadBound) {
  // One adapter only: it piles onto its first backend only while that one
  // stays within the affinity bound; then it is loaded on the other too.
  Harness h(lora_pool({16, 16}, {{1}, {1}}));
  for (uint64_t u = 1; u <= 16; ++u) ASSERT_TRUE(h.add(lora(u, 1), at_ms(0)));
  h.poll(at_ms(0));
  std::map<BackendId, uint32_t> count;
  for (const auto& [user, where] : placed(h)) ++count[where.first];
  EXPECT_GT(count[0], 0u);
  EXPECT_GT(count[1], 0u);
  EXPECT_LE(std::max(count[0], count[1]), 12u);  // (1 + 0.25) x the average and an eighth
}

TEST(SchedulerLora, ABusySlotHoldsTheRequestHereAndLetsOthersPass) {
  // One backend, one adapter slot busy with adapter 1: a request for
  // adapter 2 would wait in the engine, holding a slot there; it waits in
  // the gateway instead, and the tenant's next request, for adapter 1,
  // goes ahead of it.
  Harness h(lora_pool({8}, {{1, 2}}));
  ASSERT_TRUE(h.add(lora(1, 1), at_ms(0)));
  h.poll(at_ms(0));
  ASSERT_TRUE(h.add(lora(2, 2), at_ms(1)));
  EXPECT_TRUE(h.poll(at_ms(1)).empty());
  ASSERT_TRUE(h.add(lora(3, 1), at_ms(2)));
  EXPECT_EQ(h.poll(at_ms(2)), std::vector<uint64_t>{3});
  EXPECT_EQ(placed(h).at(3).second, Placement::kAdapterLoaded);
  // Adapter 1 done: the slot is free for adapter 2.
  ASSERT_TRUE(h.complete(1, at_ms(3)));
  ASSERT_TRUE(h.complete(3, at_ms(3)));
  EXPECT_EQ(h.poll(at_ms(3)), std::vector<uint64_t>{2});
  EXPECT_EQ(placed(h).at(2).second, Placement::kAdapterLoad);
}

TEST(SchedulerLora, AnUrgentRequestGoesAndItsEngineDrainsASlotForIt) {
  // Held past its class's aging lead (the last 20% of a 1 s wait), the
  // adapter-2 request goes to the engine, which must free a slot for it:
  // adapter 1's next request is held meanwhile instead of keeping the slot
  // busy, until the swap is done.
  SchedulerConfig config = lora_pool({8}, {{1, 2}});
  config.classes[0].max_queue_wait = std::chrono::milliseconds(1000);
  Harness h(std::move(config));
  ASSERT_TRUE(h.add(lora(1, 1), at_ms(0)));
  h.poll(at_ms(0));
  ASSERT_TRUE(h.add(lora(2, 2), at_ms(10)));
  EXPECT_TRUE(h.poll(at_ms(100)).empty());
  EXPECT_EQ(h.poll(at_ms(850)), std::vector<uint64_t>{2});
  EXPECT_EQ(placed(h).at(2).second, Placement::kAdapterWait);
  ASSERT_TRUE(h.add(lora(3, 1), at_ms(860)));
  EXPECT_TRUE(h.poll(at_ms(870)).empty());
  ASSERT_TRUE(h.complete(1, at_ms(900)));
  ASSERT_TRUE(h.scheduler().first_token(h.handle(2), at_ms(910)));  // adapter 2 has the slot
  ASSERT_TRUE(h.complete(2, at_ms(950)));
  EXPECT_EQ(h.poll(at_ms(950)), std::vector<uint64_t>{3});
}

TEST(SchedulerLora, AFullAdapterBackendDoesNotHoldUpOtherTenants) {
  // Backend 0 alone serves adapter 1 and is full; tenant 1's adapter
  // request, first in the class's order, waits; tenant 2's base-model
  // request behind it starts on backend 1.
  Harness h(lora_pool({1, 1}, {{1}, {}}));
  ASSERT_TRUE(h.add(lora(1, 1, 0), at_ms(0)));
  h.poll(at_ms(0));
  ASSERT_EQ(placed(h).at(1).first, 0u);
  ASSERT_TRUE(h.add(lora(2, 1, 1), at_ms(1)));
  ASSERT_TRUE(h.add(lora(3, 0, 2), at_ms(2)));
  EXPECT_EQ(h.poll(at_ms(3)), std::vector<uint64_t>{3});
  ASSERT_TRUE(h.complete(1, at_ms(4)));
  EXPECT_EQ(h.poll(at_ms(4)), std::vector<uint64_t>{2});
  EXPECT_EQ(placed(h).at(2).first, 0u);
}

TEST(SchedulerLora, ARetryAvoidsTheFailedBackendAmongThoseServingTheAdapter) {
  Harness h(lora_pool({4, 4, 4}, {{1}, {}, {1}}));
  ASSERT_TRUE(h.add(lora(1, 1), at_ms(0)));
  h.poll(at_ms(0));
  const BackendId failed = placed(h).at(1).first;
  ASSERT_TRUE(h.scheduler().requeue_failed(h.handle(1), 100, at_ms(1)));
  h.poll(at_ms(1));
  EXPECT_NE(placed(h).at(1).first, failed);
  EXPECT_NE(placed(h).at(1).first, 1u);
  EXPECT_EQ(placed(h).at(1).second, Placement::kAvoidFailed);
}

TEST(SchedulerLora, ConfigErrorsAreNamed) {
  SchedulerConfig config = lora_pool({4}, {{0}});
  EXPECT_FALSE(Scheduler::create(config).has_value());
  config = lora_pool({4}, {{1}}, {0});
  EXPECT_FALSE(Scheduler::create(config).has_value());
  config = lora_pool({4}, {{1}, {2}});
  EXPECT_FALSE(Scheduler::create(config).has_value());
}

}  // namespace
}  // namespace arbiter::sched
