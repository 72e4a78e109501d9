// Request lifecycle around the scheduler: cancel, supersede, debounce,
// preemption and resume, backend signals, queue limits and Retry-After.
#include <gtest/gtest.h>

#include <algorithm>
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

TEST(SchedulerLifecycle, CancelledWhileQueuedIsNeverDispatched) {
  Harness h(one_pool({named("c")}, {1}));
  h.add(1, 0, 0, 10, at_ms(0));
  h.add(2, 0, 0, 10, at_ms(0));
  h.add(3, 0, 0, 10, at_ms(0));
  Scheduler& s = h.scheduler();
  EXPECT_EQ(s.cancel(h.handle(2)), CancelOutcome::kDequeued);
  EXPECT_EQ(s.cancel(h.handle(2)), CancelOutcome::kUnknown);  // stale handle
  EXPECT_EQ(s.queue_depth(0, 0), 2u);
  EXPECT_EQ(h.drain_one_by_one(at_ms(1)), (std::vector<uint64_t>{1, 3}));

  h.add(4, 0, 0, 10, at_ms(2));
  EXPECT_EQ(h.poll(at_ms(2)), (std::vector<uint64_t>{4}));
  EXPECT_EQ(s.cancel(h.handle(4)), CancelOutcome::kReleased);
  EXPECT_EQ(s.backend_in_flight(0, 0), 0u);
  EXPECT_FALSE(h.complete(4, at_ms(3)));  // already released
  EXPECT_EQ(s.counters().total().cancelled_queued, 1u);
  EXPECT_EQ(s.counters().total().cancelled_in_flight, 1u);
  EXPECT_EQ(s.tenant_queues(), 0u);
}

TEST(SchedulerLifecycle, CancellingHalfOf100kQueuedLeavesTheOtherHalfInOrder) {
  // Removal is by position in the heaps; its cost at 100k queued is
  // measured by scheduler_bench's BM_CancelRequeue, not timed here.
  std::vector<ClassPolicy> classes;
  for (int c = 0; c < 8; ++c) {
    std::string name = "c";
    name += std::to_string(c);  // (not "c" + ...: GCC 12 -Wrestrict false positive)
    ClassPolicy cls = named(name);
    cls.max_queue = 100'000;
    classes.push_back(cls);
  }
  Harness h(one_pool(classes, {1}));
  std::mt19937 rng(7);
  for (uint64_t i = 0; i < 100'000; ++i) {
    h.add(i, static_cast<ClassId>(rng() % 8), static_cast<TenantId>(rng() % 1000), 100, at_ms(0));
  }
  for (uint64_t i = 0; i < 100'000; i += 2) {
    ASSERT_EQ(h.scheduler().cancel(h.handle(i)), CancelOutcome::kDequeued);
  }
  EXPECT_EQ(h.scheduler().queued(), 50'000u);
  const auto order = h.drain_one_by_one(at_ms(1));
  EXPECT_EQ(order.size(), 50'000u);
  EXPECT_TRUE(std::all_of(order.begin(), order.end(), [](uint64_t u) { return u % 2 == 1; }));
}

TEST(SchedulerLifecycle, SupersedeDropsTheQueuedRequestOfTheSameTenantOnly) {
  ClassPolicy c = named("c");
  c.max_queue_per_tenant = 1;  // the replacement does not count twice
  Harness h(one_pool({c}, {2}));
  h.add(1, 0, 1, 10, at_ms(0), "k");
  const Admission second = h.add(2, 0, 1, 10, at_ms(1), "k");
  ASSERT_TRUE(second.superseded.has_value());
  EXPECT_EQ(second.superseded->handle, h.handle(1));
  EXPECT_EQ(second.superseded->user, 1u);
  EXPECT_FALSE(second.superseded->in_flight);
  EXPECT_FALSE(h.add(3, 0, 2, 10, at_ms(2), "k").superseded.has_value());  // other tenant
  EXPECT_EQ(h.poll(at_ms(3)), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(h.scheduler().cancel(h.handle(1)), CancelOutcome::kUnknown);
  const ClassCounters total = h.scheduler().counters().total();
  EXPECT_EQ(total.superseded_queued, 1u);
  EXPECT_EQ(total.cancelled_queued, 0u);
}

TEST(SchedulerLifecycle, SupersedeOfARunningRequestAsksForAnAbort) {
  Harness h(one_pool({named("c")}, {1, 1}));
  h.add(1, 0, 1, 10, at_ms(0), "k");
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
  const BackendId backend = h.actions().dispatches.front().backend;
  const Admission second = h.add(2, 0, 1, 10, at_ms(5), "k");
  ASSERT_TRUE(second.superseded.has_value());
  EXPECT_TRUE(second.superseded->in_flight);
  EXPECT_EQ(second.superseded->backend, backend);
  // The slot stays taken until the network layer reports the abort.
  EXPECT_EQ(h.scheduler().backend_in_flight(0, backend), 1u);
  EXPECT_EQ(h.poll(at_ms(5)), (std::vector<uint64_t>{2}));
  EXPECT_TRUE(h.complete(1, at_ms(6)));
  EXPECT_EQ(h.scheduler().backend_in_flight(0, backend), 0u);
  const ClassCounters total = h.scheduler().counters().total();
  EXPECT_EQ(total.superseded_in_flight, 1u);
  EXPECT_EQ(total.completed, 0u);  // an aborted request is not a completion
  EXPECT_EQ(total.cancelled_in_flight, 0u);
}

TEST(SchedulerLifecycle, DebounceCollapsesABurstOfFiveToTheLast) {
  ClassPolicy completion = named("completion");
  completion.debounce = 30ms;
  Harness h(one_pool({completion}, {4}));
  int superseded = 0;
  for (uint64_t k = 1; k <= 5; ++k) {
    const int64_t t = static_cast<int64_t>(k - 1) * 10;  // keystrokes 10 ms apart
    superseded += h.add(k, 0, 3, 100, at_ms(t), "doc-1:cursor").superseded.has_value() ? 1 : 0;
    EXPECT_TRUE(h.poll(at_ms(t)).empty());
  }
  EXPECT_EQ(superseded, 4);
  EXPECT_EQ(h.scheduler().next_wakeup(), at_ms(70));  // last keystroke + 30 ms
  EXPECT_TRUE(h.poll(at_ms(69)).empty());
  EXPECT_EQ(h.poll(at_ms(70)), (std::vector<uint64_t>{5}));
  EXPECT_EQ(h.scheduler().counters().total().superseded_queued, 4u);
  EXPECT_EQ(h.scheduler().counters().total().dispatched, 1u);
}

TEST(SchedulerLifecycle, PreemptsTheMostRecentlyStartedAndResumesItWithReducedTokens) {
  ClassPolicy rt = named("rt");
  rt.min_share = 0.25;
  ClassPolicy batch = named("batch");
  batch.preemptible = true;
  Harness h(one_pool({rt, batch}, {2, 2}));
  for (uint64_t b = 1; b <= 4; ++b) {
    h.add(b, 1, 9, 100, at_ms(static_cast<int64_t>(b)));
    ASSERT_EQ(h.poll(at_ms(static_cast<int64_t>(b))), (std::vector<uint64_t>{b}));
  }
  h.add(5, 1, 9, 100, at_ms(5));  // same tenant, arrives after batch 4 started
  h.add(100, 0, 1, 10, at_ms(10));
  EXPECT_TRUE(h.poll(at_ms(10)).empty());
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  const Preemption victim = h.actions().preemptions.front();
  EXPECT_EQ(victim.user, 4u);  // started last: least work lost
  EXPECT_TRUE(h.poll(at_ms(10)).empty());
  EXPECT_TRUE(h.actions().preemptions.empty());  // one shortage, one preemption
  EXPECT_FALSE(h.scheduler().requeue_preempted(h.handle(3), 40, at_ms(11)));  // not a victim

  ASSERT_TRUE(h.scheduler().requeue_preempted(victim.handle, 40, at_ms(11)));
  EXPECT_EQ(h.poll(at_ms(11)), (std::vector<uint64_t>{100}));  // the freed slot goes to rt
  EXPECT_TRUE(h.complete(100, at_ms(20)));
  EXPECT_EQ(h.poll(at_ms(20)), (std::vector<uint64_t>{4}));  // its standing beats batch 5
  const Dispatch& resumed = h.actions().dispatches.front();
  EXPECT_EQ(resumed.preemptions, 1u);
  EXPECT_EQ(resumed.cost_tokens, 40);
  EXPECT_EQ(resumed.queue_wait, 9ms);
  EXPECT_EQ(h.scheduler().counters().total().preempted, 1u);
}

TEST(SchedulerLifecycle, PreemptionSparesAClassAtItsOwnGuarantee) {
  // rt needs 2 of 4 slots; std (preemptible) holds 2, its own guarantee;
  // "other" holds 2 and is not preemptible: nobody may be preempted.
  ClassPolicy rt = named("rt");
  rt.min_share = 0.5;
  ClassPolicy std_class = named("std");
  std_class.min_share = 0.5;
  std_class.preemptible = true;
  Harness h(one_pool({rt, std_class, named("other")}, {4}));
  for (uint64_t i = 0; i < 2; ++i) {
    h.add(10 + i, 1, 0, 10, at_ms(0));
    h.add(20 + i, 2, 0, 10, at_ms(0));
  }
  ASSERT_EQ(h.poll(at_ms(0)).size(), 4u);
  h.add(100, 0, 0, 10, at_ms(1));
  h.poll(at_ms(1));
  EXPECT_TRUE(h.actions().preemptions.empty());
  // Freed slots go to rt first while it is below its guarantee.
  h.complete(20, at_ms(2));
  h.add(12, 1, 0, 10, at_ms(2));
  h.poll(at_ms(2));  // rt takes the free slot first
  EXPECT_EQ(h.actions().dispatches.front().user, 100u);
  h.add(101, 0, 0, 10, at_ms(3));
  h.complete(21, at_ms(3));
  h.poll(at_ms(3));  // the free slot goes to rt again (below 2)
  EXPECT_EQ(h.actions().dispatches.front().user, 101u);
  EXPECT_TRUE(h.actions().preemptions.empty());
}

TEST(SchedulerLifecycle, PreemptibleWorkIsPreemptedOnlyForAGuarantee) {
  // std has no min_share: it waits for a completion instead of preempting.
  ClassPolicy batch = named("batch");
  batch.preemptible = true;
  Harness h(one_pool({named("std"), batch}, {1}));
  h.add(1, 1, 0, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
  h.add(2, 0, 0, 10, at_ms(1));
  EXPECT_TRUE(h.poll(at_ms(1)).empty());
  EXPECT_TRUE(h.actions().preemptions.empty());
}

TEST(SchedulerLifecycle, BackgroundIsPreemptedForAnyWaitingClass) {
  ClassPolicy bg = named("bg");
  bg.background = true;
  Harness h(one_pool({named("std"), bg}, {1}));
  h.add(1, 1, 0, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));  // idle capacity
  h.add(2, 0, 0, 10, at_ms(1));
  EXPECT_TRUE(h.poll(at_ms(1)).empty());
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  EXPECT_EQ(h.actions().preemptions.front().user, 1u);
  // If it finishes before the abort lands, complete() frees the slot instead.
  EXPECT_TRUE(h.complete(1, at_ms(2)));
  EXPECT_EQ(h.poll(at_ms(2)), (std::vector<uint64_t>{2}));
}

TEST(SchedulerLifecycle, AVictimSupersededWhilePreemptedSaysSoAndIsNotRequeued) {
  // Its run is being stopped: a newer request with its key learns that
  // there is no generation left to inherit (typing through is refused),
  // and the victim's requeue is refused (its client is answered superseded).
  ClassPolicy bg = named("bg");
  bg.background = true;
  bg.typing_through = true;
  Harness h(one_pool({named("std"), bg}, {1}));
  h.add(1, 1, 0, 10, at_ms(0), "k");
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
  h.add(2, 0, 0, 10, at_ms(1));
  h.poll(at_ms(1));
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  const Admission newer = h.add(3, 1, 0, 10, at_ms(2), "k");
  ASSERT_TRUE(newer.superseded && newer.superseded->in_flight);
  EXPECT_TRUE(newer.superseded->preempting);
  EXPECT_FALSE(h.scheduler().requeue_preempted(h.handle(1), 5, at_ms(3)));
  EXPECT_TRUE(h.complete(1, at_ms(3)));  // its abort landed: the slot is free
}

TEST(SchedulerLifecycle, ARunningRequestSupersededIsNotPreempting) {
  Harness h(one_pool({named("c")}, {1}));
  h.add(1, 0, 0, 10, at_ms(0), "k");
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
  const Admission newer = h.add(2, 0, 0, 10, at_ms(1), "k");
  ASSERT_TRUE(newer.superseded && newer.superseded->in_flight);
  EXPECT_FALSE(newer.superseded->preempting);
}

TEST(SchedulerLifecycle, PreemptionNeedIsBoundedByTheRoomUnderMaxShare) {
  // chat (cap 5 of 10 slots) holds 4 with 20 queued; background holds 6.
  // chat can use one more slot, so exactly one background job is preempted,
  // not six (issue 11: every background job was preempted, chat took one
  // slot, background took the rest back, and the loop repeated).
  ClassPolicy chat = named("chat");
  chat.max_share = 0.5;
  ClassPolicy bg = named("bg");
  bg.background = true;
  Harness h(one_pool({chat, bg}, {10}));
  for (uint64_t i = 0; i < 6; ++i) h.add(100 + i, 1, 0, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)).size(), 6u);
  for (uint64_t i = 0; i < 24; ++i) h.add(i, 0, 0, 10, at_ms(1));
  ASSERT_EQ(h.poll(at_ms(1)).size(), 4u);  // chat fills the idle slots
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  h.poll(at_ms(2));  // that slot is on its way back: no second preemption
  EXPECT_TRUE(h.actions().preemptions.empty());
  ASSERT_TRUE(h.scheduler().requeue_preempted(h.handle(105), 10, at_ms(3)));  // the newest
  EXPECT_EQ(h.poll(at_ms(3)), (std::vector<uint64_t>{4}));  // chat takes it, not background
  EXPECT_TRUE(h.actions().preemptions.empty());              // chat is at its cap: no need
  EXPECT_TRUE(h.poll(at_ms(4)).empty());
  EXPECT_TRUE(h.actions().preemptions.empty());
  EXPECT_EQ(h.scheduler().counters().total().preempted, 1u);
}

// One slot, preempt_guard 5 s: class 1's request 1 runs, is preempted for
// class 0's request 2 at 1 ms, requeued at 2 ms and resumed at 3 ms when 2
// ends; class 0's request 3 then arrives at 4 ms and needs the slot.
void resume_within_guard(Harness& h) {
  h.add(1, 1, 0, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
  h.add(2, 0, 0, 10, at_ms(1));
  h.poll(at_ms(1));
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  ASSERT_TRUE(h.scheduler().requeue_preempted(h.handle(1), 10, at_ms(2)));
  EXPECT_EQ(h.poll(at_ms(2)), (std::vector<uint64_t>{2}));
  h.complete(2, at_ms(3));
  EXPECT_EQ(h.poll(at_ms(3)), (std::vector<uint64_t>{1}));  // resumed
  h.add(3, 0, 0, 10, at_ms(4));
}

TEST(SchedulerLifecycle, AResumedVictimIsNotPreemptedAgainWithinTheGuard) {
  ClassPolicy bg = named("bg");
  bg.background = true;
  SchedulerConfig config = one_pool({named("std"), bg}, {1});
  config.preempt_guard = 5000ms;
  Harness h(std::move(config));
  resume_within_guard(h);
  h.poll(at_ms(4));
  EXPECT_TRUE(h.actions().preemptions.empty());  // within 5 s of its requeue
  h.poll(at_ms(5001));
  EXPECT_TRUE(h.actions().preemptions.empty());
  h.poll(at_ms(5002));  // the guard has passed
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  EXPECT_EQ(h.actions().preemptions.front().user, 1u);
  EXPECT_EQ(h.scheduler().counters().guard_held[0], 0u) << "counted for guarantees only";
}

TEST(SchedulerLifecycle, AGuaranteeTheGuardHoldsBackIsCounted) {
  // gold's min_share needs std's slot, but std's request was resumed within
  // the guard: no preemption, counters().guard_held says why (the gateway's
  // arbiter_preemptions_guard_held_total), and the next poll is due when the
  // guard ends.
  ClassPolicy gold = named("gold");
  gold.min_share = 0.5;
  ClassPolicy std_class = named("std");
  std_class.preemptible = true;
  SchedulerConfig config = one_pool({gold, std_class}, {1});
  config.preempt_after = Duration::zero();
  config.preempt_guard = 5000ms;
  Harness h(std::move(config));
  resume_within_guard(h);
  h.poll(at_ms(4));
  EXPECT_TRUE(h.actions().preemptions.empty());
  EXPECT_EQ(h.scheduler().counters().guard_held[0], 1u);
  EXPECT_EQ(h.scheduler().next_wakeup(), at_ms(5002)) << "a poll when the guard ends";
  h.poll(at_ms(5002));
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  EXPECT_EQ(h.scheduler().counters().guard_held[0], 1u);
}

// One backend with 100 slots that prefills 1000 tokens/s; a new request may
// start only while less than 250 ms (250 tokens) of prefill is queued there.
SchedulerConfig prefill_limited(std::vector<ClassPolicy> classes) {
  SchedulerConfig config = one_pool(std::move(classes), {100});
  config.pools[0].prefill_tokens_per_s = {1000};
  config.max_prefill_backlog = 250ms;
  return config;
}

Admission add_prompt(Harness& h, uint64_t user, ClassId klass, int64_t prompt, TimePoint now) {
  return h.add(user, klass, 0, prompt + 10, now, {}, std::nullopt, prompt);
}

TEST(SchedulerLifecycle, APrefillBacklogHoldsWorkInTheGatewayUntilItDrains) {
  std::vector<Handle> handles;
  Harness h(prefill_limited({named("c")}));
  for (uint64_t i = 0; i < 5; ++i) handles.push_back(add_prompt(h, i, 0, 200, at_ms(0)).handle);
  // 0 then 200 tokens queued: two start; at 400 the third waits.
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{0, 1}));
  // The backlog drains at 1000 tokens/s: below 250 tokens after 150 ms.
  const auto wake = h.scheduler().next_wakeup();
  ASSERT_TRUE(wake.has_value());
  EXPECT_GE(*wake, at_ms(150));
  EXPECT_LE(*wake, at_ms(151));
  EXPECT_TRUE(h.poll(at_ms(149)).empty());
  EXPECT_EQ(h.poll(*wake), (std::vector<uint64_t>{2}));
  // A first token reported means that prompt is prefilled: room at once.
  EXPECT_TRUE(h.poll(*wake).empty());
  EXPECT_TRUE(h.scheduler().first_token(handles[1], *wake));
  EXPECT_TRUE(h.scheduler().first_token(handles[2], *wake));
  EXPECT_EQ(h.poll(*wake), (std::vector<uint64_t>{3}));
  EXPECT_FALSE(h.scheduler().first_token(handles[4], *wake));  // still queued
}

// Issue 41: a gateway replica that has a share of the engine (adaptive
// capacity's part of its budget) keeps that share of the prefill backlog,
// drained at that share of the prefill rate: the replicas together leave the
// engine one backlog, as one gateway would.
TEST(SchedulerLifecycle, AShareOfTheEngineIsThatShareOfItsPrefillBacklog) {
  Harness h(prefill_limited({named("c")}));
  EXPECT_TRUE(h.scheduler().set_backend_state(0, 0, {.engine_share = 0.5}));
  for (uint64_t i = 0; i < 6; ++i) add_prompt(h, i, 0, 100, at_ms(0));
  // 125 tokens of backlog, not 250: two start, at 200 the third waits.
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{0, 1}));
  // It drains at 500 tokens/s: below 125 after 150 ms (1000 tokens/s: 75 ms).
  const auto wake = h.scheduler().next_wakeup();
  ASSERT_TRUE(wake.has_value());
  EXPECT_GE(*wake, at_ms(150));
  EXPECT_LE(*wake, at_ms(151));
  // The whole engine again: the whole backlog.
  EXPECT_TRUE(h.scheduler().set_backend_state(0, 0, {}));
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{2}));
}

TEST(SchedulerLifecycle, BelowTheTopPriorityTheBacklogKeepsHeadroom) {
  // "low" may fill only half of the prefill limit (125 tokens), so a request
  // of the top class finds a short prefill queue in the engine.
  ClassPolicy top = named("top");
  ClassPolicy low = named("low");
  low.engine_priority = 5;
  Harness h(prefill_limited({top, low}));
  add_prompt(h, 1, 0, 10, at_ms(0));  // top is in use (running)
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
  for (uint64_t i = 10; i < 13; ++i) add_prompt(h, i, 1, 100, at_ms(0));
  // 10 and 110 tokens queued are below 125; at 210 "low" waits.
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{10, 11}));
  add_prompt(h, 2, 0, 100, at_ms(0));
  EXPECT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{2}));  // top may go up to 250
}

TEST(SchedulerLifecycle, EachDispatchSaysWhatItWaitedFor) {
  ClassPolicy capped = named("capped");
  capped.max_share = 0.5;
  ClassPolicy keyed = named("keyed");
  keyed.debounce = 30ms;
  Harness h(one_pool({named("c"), capped, keyed}, {2}));
  h.add(1, 0, 0, 10, at_ms(0));
  h.add(2, 0, 0, 10, at_ms(0));
  h.add(3, 0, 0, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(h.actions().dispatches[0].waited_for, WaitReason::kNone);  // started at once
  h.complete(1, at_ms(5));
  ASSERT_EQ(h.poll(at_ms(5)), (std::vector<uint64_t>{3}));
  EXPECT_EQ(h.actions().dispatches[0].waited_for, WaitReason::kCapacity);
  // "capped" holds its one slot (half of two) while "c" has work: share_cap.
  h.add(10, 1, 0, 10, at_ms(6));
  h.add(11, 1, 0, 10, at_ms(6));
  h.add(4, 0, 0, 10, at_ms(6));
  h.complete(2, at_ms(7));
  ASSERT_EQ(h.poll(at_ms(7)), (std::vector<uint64_t>{10}));
  h.complete(3, at_ms(8));
  ASSERT_EQ(h.poll(at_ms(8)), (std::vector<uint64_t>{4}));  // not the capped class's 11
  h.complete(4, at_ms(9));
  ASSERT_EQ(h.poll(at_ms(9)), (std::vector<uint64_t>{11}));  // nobody else waits: lent
  EXPECT_EQ(h.actions().dispatches[0].waited_for, WaitReason::kShareCap);
  // A keyed request of a debounced class waits out its debounce.
  h.complete(10, at_ms(10));
  h.complete(11, at_ms(10));
  h.add(20, 2, 0, 10, at_ms(10), "k");
  EXPECT_TRUE(h.poll(at_ms(10)).empty());
  ASSERT_EQ(h.poll(at_ms(40)), (std::vector<uint64_t>{20}));
  EXPECT_EQ(h.actions().dispatches[0].waited_for, WaitReason::kDebounce);
}

TEST(SchedulerLifecycle, WaitsOnEngineSignalsAndPrefillAreNamedToo) {
  Harness h(prefill_limited({named("c")}));
  add_prompt(h, 1, 0, 300, at_ms(0));
  add_prompt(h, 2, 0, 300, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));  // 300 tokens queued: full
  ASSERT_EQ(h.poll(at_ms(100)), (std::vector<uint64_t>{2}));  // drained below 250
  EXPECT_EQ(h.actions().dispatches[0].waited_for, WaitReason::kPrefill);
  add_prompt(h, 3, 0, 10, at_ms(101));
  h.scheduler().set_backend_state(0, 0, {.saturated = true});
  EXPECT_TRUE(h.poll(at_ms(101)).empty());
  h.scheduler().set_backend_state(0, 0, {});
  EXPECT_TRUE(h.scheduler().first_token(h.handle(2), at_ms(102)));
  EXPECT_TRUE(h.scheduler().first_token(h.handle(1), at_ms(102)));
  ASSERT_EQ(h.poll(at_ms(102)), (std::vector<uint64_t>{3}));
  EXPECT_EQ(h.actions().dispatches[0].waited_for, WaitReason::kSaturated);
  EXPECT_EQ(wait_reason_name(WaitReason::kSaturated), "saturated");
  EXPECT_EQ(deadline_error(1000ms, WaitReason::kCapacity).message,
            "request waited past its class's max_queue_wait (waiting for: capacity)");
}

TEST(SchedulerLifecycle, ARequestThatCannotResumeIsNeverAVictim) {
  ClassPolicy bg = named("bg");
  bg.background = true;
  Harness h(one_pool({named("std"), bg}, {2}));
  h.add(1, 1, 0, 10, at_ms(0));  // resumable background work
  auto fixed = h.scheduler().enqueue(
      Request{.user = 2, .pool = 0, .klass = 1, .tenant = 0, .cost_tokens = 10, .resumable = false}, at_ms(1));
  ASSERT_TRUE(fixed.has_value());
  ASSERT_EQ(h.poll(at_ms(1)).size(), 2u);
  h.add(3, 0, 0, 10, at_ms(2));
  h.add(4, 0, 0, 10, at_ms(2));
  EXPECT_TRUE(h.poll(at_ms(2)).empty());
  // Two waiting, two background running, but only the resumable one is taken,
  // although the other started later.
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  EXPECT_EQ(h.actions().preemptions.front().user, 1u);
}

TEST(SchedulerLifecycle, NoVictimOnASaturatedBackend) {
  // Freeing a slot on a saturated backend helps nobody: the victim would be
  // requeued and preempted again, over and over.
  ClassPolicy bg = named("bg");
  bg.background = true;
  Harness h(one_pool({named("std"), bg}, {1, 1}));
  h.add(1, 1, 0, 10, at_ms(0));
  h.add(2, 1, 0, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)).size(), 2u);
  const BackendId newest_on = h.actions().dispatches.back().backend;
  h.scheduler().set_backend_state(0, newest_on, BackendSignal{.saturated = true});
  h.add(3, 0, 0, 10, at_ms(1));
  EXPECT_TRUE(h.poll(at_ms(1)).empty());
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  EXPECT_EQ(h.actions().preemptions.front().user, 1u) << "the older one, on the backend that can take work";
  EXPECT_NE(h.actions().preemptions.front().backend, newest_on);

  // Both saturated: nothing is preempted at all.
  Harness both(one_pool({named("std"), bg}, {1, 1}));
  both.add(1, 1, 0, 10, at_ms(0));
  both.add(2, 1, 0, 10, at_ms(0));
  ASSERT_EQ(both.poll(at_ms(0)).size(), 2u);
  both.scheduler().set_backend_state(0, 0, BackendSignal{.saturated = true});
  both.scheduler().set_backend_state(0, 1, BackendSignal{.saturated = true});
  both.add(3, 0, 0, 10, at_ms(1));
  EXPECT_TRUE(both.poll(at_ms(1)).empty());
  EXPECT_TRUE(both.actions().preemptions.empty());
}

TEST(SchedulerLifecycle, PreemptionWaitsPreemptAfter) {
  // A slot may free up on its own: nothing is preempted before the waiting
  // request has waited preempt_after, and next_wakeup() asks for a poll then.
  ClassPolicy rt = named("rt");
  rt.min_share = 0.5;
  ClassPolicy batch = named("batch");
  batch.preemptible = true;
  SchedulerConfig config = one_pool({rt, batch}, {2});
  config.preempt_after = 100ms;
  Harness h(std::move(config));
  h.add(1, 1, 0, 10, at_ms(0));
  h.add(2, 1, 0, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)).size(), 2u);
  h.add(3, 0, 0, 10, at_ms(10));
  EXPECT_TRUE(h.poll(at_ms(10)).empty());
  EXPECT_TRUE(h.actions().preemptions.empty());
  EXPECT_EQ(h.scheduler().next_wakeup(), at_ms(110));
  EXPECT_TRUE(h.poll(at_ms(109)).empty());
  EXPECT_TRUE(h.actions().preemptions.empty());
  h.poll(at_ms(110));
  ASSERT_EQ(h.actions().preemptions.size(), 1u);
  EXPECT_EQ(h.actions().preemptions.front().user, 2u);
  // Entitled but the victim is already on its way: no wake-up storm.
  EXPECT_NE(h.scheduler().next_wakeup(), at_ms(110));

  // A class with a short max_queue_wait preempts after half of it, not
  // after preempt_after: its requests must not expire waiting for the delay.
  rt.max_queue_wait = 120ms;
  SchedulerConfig tight = one_pool({rt, batch}, {2});
  tight.preempt_after = 1s;
  Harness t(std::move(tight));
  t.add(1, 1, 0, 10, at_ms(0));
  t.add(2, 1, 0, 10, at_ms(0));
  ASSERT_EQ(t.poll(at_ms(0)).size(), 2u);
  t.add(3, 0, 0, 10, at_ms(10));
  t.poll(at_ms(10));
  EXPECT_EQ(t.scheduler().next_wakeup(), at_ms(70));
  t.poll(at_ms(70));
  EXPECT_EQ(t.actions().preemptions.size(), 1u);
}

TEST(SchedulerLifecycle, PreemptionCanBeSwitchedOff) {
  ClassPolicy bg = named("bg");
  bg.background = true;
  SchedulerConfig config = one_pool({named("std"), bg}, {1});
  config.preemption = false;
  Harness h(std::move(config));
  h.add(1, 1, 0, 10, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(0)), (std::vector<uint64_t>{1}));
  h.add(2, 0, 0, 10, at_ms(1));
  EXPECT_TRUE(h.poll(at_ms(1)).empty());
  EXPECT_TRUE(h.actions().preemptions.empty());  // std waits for the completion
  h.complete(1, at_ms(2));
  EXPECT_EQ(h.poll(at_ms(2)), (std::vector<uint64_t>{2}));
}

TEST(SchedulerLifecycle, BackendPickIsLeastLoadedRelativeToLimitAndRotates) {
  Harness h(one_pool({named("c")}, {2, 2}));
  for (uint64_t i = 0; i < 4; ++i) h.add(i, 0, 0, 10, at_ms(0));
  h.poll(at_ms(0));
  std::vector<BackendId> backends;
  for (const Dispatch& d : h.actions().dispatches) backends.push_back(d.backend);
  EXPECT_EQ(backends, (std::vector<BackendId>{0, 1, 0, 1}));

  Harness uneven(one_pool({named("c")}, {1, 3}));
  for (uint64_t i = 0; i < 5; ++i) uneven.add(i, 0, 0, 10, at_ms(0));
  EXPECT_EQ(uneven.poll(at_ms(0)).size(), 4u);
  EXPECT_EQ(uneven.scheduler().backend_in_flight(0, 0), 1u);
  EXPECT_EQ(uneven.scheduler().backend_in_flight(0, 1), 3u);
}

TEST(SchedulerLifecycle, SaturatedTakesNothingStaleFallsBackToTheLimitDownIsSkipped) {
  Harness h(one_pool({named("c")}, {1, 1}));
  Scheduler& s = h.scheduler();
  s.set_backend_state(0, 0, {.saturated = true, .stale = false, .down = false});
  for (uint64_t i = 0; i < 4; ++i) h.add(i, 0, 0, 10, at_ms(0));
  h.poll(at_ms(0));
  ASSERT_EQ(h.actions().dispatches.size(), 1u);
  EXPECT_EQ(h.actions().dispatches.front().backend, 1u);
  EXPECT_EQ(s.capacity(0), 2u);  // saturation is momentary: still capacity

  // Metrics too old: the saturated flag is ignored, the limit alone applies.
  s.set_backend_state(0, 0, {.saturated = true, .stale = true, .down = false});
  h.poll(at_ms(1));
  ASSERT_EQ(h.actions().dispatches.size(), 1u);
  EXPECT_EQ(h.actions().dispatches.front().backend, 0u);
  EXPECT_EQ(s.counters().stale_dispatches, 1u);

  s.set_backend_state(0, 1, {.saturated = false, .stale = false, .down = true});
  EXPECT_EQ(s.capacity(0), 1u);
  h.complete(0, at_ms(2));  // frees backend 1's slot, but it is down
  h.poll(at_ms(2));
  EXPECT_TRUE(h.actions().dispatches.empty());
  s.set_backend_state(0, 1, {});
  EXPECT_EQ(h.poll(at_ms(3)).size(), 1u);
}

TEST(SchedulerLifecycle, FullClassQueueAnswers429WithRetryAfterFromItsLength) {
  // Before any completion the drain rate is the fallback: 50 tokens/s per
  // slot, one slot; each request costs 100 tokens -> 2 s per queued request.
  for (const uint32_t limit : {3u, 6u}) {
    ClassPolicy c = named("c");
    c.max_queue = limit;
    Harness h(one_pool({c}, {1}));
    for (uint64_t i = 0; i < limit; ++i) h.add(i, 0, i, 100, at_ms(0));
    const auto rejected = h.scheduler().enqueue(Request{.user = 99,
                                                        .pool = 0,
                                                        .klass = 0,
                                                        .tenant = 99,
                                                        .cost_tokens = 100,
                                                        .deadline = std::nullopt,
                                                        .supersede_key = {}},
                                                at_ms(0));
    ASSERT_FALSE(rejected.has_value());
    EXPECT_EQ(rejected.error().status(), 429);
    EXPECT_EQ(rejected.error().retry_after, std::chrono::milliseconds(2000 * limit));
    EXPECT_EQ(h.scheduler().counters().total().rejected_class_full, 1u);
  }
}

TEST(SchedulerLifecycle, RetryAfterFollowsTheObservedCompletionRate) {
  Harness h(one_pool({named("c")}, {1}));
  // A minute of one 100-token completion every 100 ms: 1000 tokens/s.
  uint64_t user = 0;
  for (int64_t t = 0; t < 60'000; t += 100) {
    h.add(user, 0, 0, 100, at_ms(t));
    h.poll(at_ms(t));
    h.complete(user++, at_ms(t + 100));
  }
  const auto drain_of = [&](int queued) {
    for (int i = 0; i < queued; ++i) h.add(user++, 0, 1, 100, at_ms(60'000));
    return h.scheduler().expected_drain(0, 0, at_ms(60'000));
  };
  const auto five = drain_of(5);  // 500 tokens at ~1000/s
  EXPECT_NEAR(static_cast<double>(five.count()), 500.0, 25.0);
  const auto ten = drain_of(5);  // 1000 tokens
  EXPECT_NEAR(static_cast<double>(ten.count()), 1000.0, 50.0);
}

TEST(SchedulerLifecycle, FullTenantQueueAnswers429AndOtherTenantsStillGetIn) {
  ClassPolicy c = named("c");
  c.max_queue_per_tenant = 2;
  Harness h(one_pool({c}, {1}));
  h.add(1, 0, 1, 100, at_ms(0));
  h.add(2, 0, 1, 100, at_ms(0));
  const auto rejected = h.scheduler().enqueue(Request{.user = 3,
                                                      .pool = 0,
                                                      .klass = 0,
                                                      .tenant = 1,
                                                      .cost_tokens = 100,
                                                      .deadline = std::nullopt,
                                                      .supersede_key = {}},
                                              at_ms(0));
  ASSERT_FALSE(rejected.has_value());
  EXPECT_EQ(rejected.error().status(), 429);
  EXPECT_EQ(rejected.error().retry_after, 4000ms);  // its own 200 tokens at 50/s
  h.add(4, 0, 2, 100, at_ms(0));
  EXPECT_EQ(h.scheduler().counters().total().rejected_tenant_full, 1u);
}

// One slot held forever; request 1 queued at 0 with a 1 s deadline, then
// `behind` more at 500 ms. Returns the Retry-After of request 1's 503.
std::chrono::milliseconds expiry_retry_after(int behind) {
  ClassPolicy c = named("c");
  c.max_queue_wait = 1s;
  Harness h(one_pool({c}, {1}));
  h.add(100, 0, 0, 10, at_ms(0));
  h.poll(at_ms(0));  // 100 holds the slot
  h.add(1, 0, 0, 100, at_ms(0));
  for (int i = 0; i < behind; ++i) h.add(200 + i, 0, 0, 100, at_ms(500));
  EXPECT_EQ(h.scheduler().next_wakeup(), at_ms(1000));
  h.poll(at_ms(999));
  EXPECT_TRUE(h.actions().expired.empty());
  h.poll(at_ms(1000));
  EXPECT_EQ(h.actions().expired.size(), 1u);
  if (h.actions().expired.empty()) return {};
  const Expired& e = h.actions().expired.front();
  EXPECT_EQ(e.user, 1u);
  EXPECT_EQ(e.waited, 1s);
  EXPECT_EQ(h.scheduler().counters().total().expired, 1u);
  return e.retry_after;
}

TEST(SchedulerLifecycle, DeadlineExpiryAnswers503WithRetryAfterFromTheQueue) {
  EXPECT_EQ(expiry_retry_after(2), 4000ms);  // 200 tokens left at 50 tokens/s
  EXPECT_EQ(expiry_retry_after(5), 10'000ms);
  EXPECT_EQ(deadline_error(4000ms).status(), 503);
  EXPECT_EQ(deadline_error(4000ms).retry_after, 4000ms);
}

TEST(SchedulerLifecycle, ActualTokensCorrectTheCharge) {
  // Tenant 1's first request was estimated at 1000 tokens but used 10: after
  // the correction tenant 1 is behind tenant 2 again and goes next.
  Harness h(one_pool({named("c")}, {1}));
  h.add(1, 0, 1, 1000, at_ms(0));
  h.add(2, 0, 1, 1000, at_ms(0));
  h.add(3, 0, 2, 100, at_ms(0));
  h.add(4, 0, 2, 100, at_ms(0));
  std::vector<uint64_t> order;
  for (int step = 0; step < 4; ++step) {
    const auto started = h.poll(at_ms(step));
    ASSERT_EQ(started.size(), 1u);
    order.push_back(started.front());
    h.complete(started.front(), at_ms(step), started.front() == 1 ? 10 : 100);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 3, 2, 4}));
}

TEST(SchedulerLifecycle, InvalidConfigsAreRejected) {
  ClassPolicy a = named("a");
  a.min_share = 0.6;
  ClassPolicy b = named("b");
  b.min_share = 0.6;
  EXPECT_FALSE(Scheduler::create(one_pool({a, b}, {1})).has_value());
  ClassPolicy capped = named("capped");
  capped.min_share = 0.5;
  capped.max_share = 0.4;
  EXPECT_FALSE(Scheduler::create(one_pool({capped}, {1})).has_value());
  EXPECT_FALSE(Scheduler::create(one_pool({named("c")}, {})).has_value());
  EXPECT_FALSE(Scheduler::create(one_pool({}, {1})).has_value());
  EXPECT_EQ(policy_from_string("hybrid"), Policy::kHybrid);
  EXPECT_EQ(policy_from_string("fifo"), Policy::kFifo);
  EXPECT_EQ(policy_from_string("priority"), Policy::kPriority);
  EXPECT_FALSE(policy_from_string("random").has_value());
}

}  // namespace
}  // namespace arbiter::sched
