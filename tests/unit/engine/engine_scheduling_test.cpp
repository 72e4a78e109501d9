// Scheduling policy, aborts and submit validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/engine.hpp"
#include "engine/replay.hpp"

namespace arbiter::engine::engine_scheduling_test {
namespace {

EngineConfig config(SchedulingPolicy policy, std::uint32_t max_num_seqs) {
  return EngineConfig{
      .cost = {.base_s = 10e-3,
               .prefill_token_s = 0.1e-3,
               .decode_seq_s = 1e-3,
               .context_token_s = 0},
      .num_blocks = 1000,
      .block_size = 16,
      .max_num_seqs = max_num_seqs,
      .max_num_batched_tokens = 4096,
      .max_model_len = 8192,
      .policy = policy,
  };
}

SubmitRequest request(RequestId id, std::uint32_t prompt, std::uint32_t output, int priority = 0) {
  return SubmitRequest{.id = id,
                       .prompt_tokens = prompt,
                       .block_hashes = {},
                       .output_tokens = output,
                       .priority = priority};
}

// Ids in the order they first ran, with one sequence at a time.
std::vector<RequestId> service_order(SchedulingPolicy policy) {
  Engine engine(config(policy, 1));
  std::vector<Arrival> arrivals{
      {0.0, request(1, 50, 3, 5)},
      {0.0, request(2, 50, 3, 1)},
      {0.0, request(3, 50, 3, 3)},
      {0.0, request(4, 50, 3, 1)},
  };
  ReplayResult result = replay(engine, std::move(arrivals));
  std::sort(result.completed.begin(), result.completed.end(),
            [](const Completed& a, const Completed& b) {
              return a.timing.first_scheduled < b.timing.first_scheduled;
            });
  std::vector<RequestId> order;
  for (const Completed& c : result.completed) order.push_back(c.id);
  return order;
}

TEST(EngineScheduling, PriorityPolicyRunsLowestValueFirstTiesByArrival) {
  EXPECT_EQ(service_order(SchedulingPolicy::kPriority), (std::vector<RequestId>{2, 4, 3, 1}));
}

TEST(EngineScheduling, FcfsIgnoresPriority) {
  EXPECT_EQ(service_order(SchedulingPolicy::kFcfs), (std::vector<RequestId>{1, 2, 3, 4}));
}

TEST(EngineScheduling, PriorityPolicyPreemptsTheLowestPriorityFirst) {
  EngineConfig c = config(SchedulingPolicy::kPriority, 8);
  c.num_blocks = 12;  // two requests of 6 blocks each at most
  Engine engine(c);
  ASSERT_TRUE(engine.submit(request(1, 16, 80, /*priority=*/0), 0.0));
  ASSERT_TRUE(engine.submit(request(2, 16, 80, /*priority=*/9), 0.0));  // FCFS would pick 3
  ASSERT_TRUE(engine.submit(request(3, 16, 80, /*priority=*/0), 0.0));
  double now = 0;
  std::vector<RequestId> preempted;
  while (preempted.empty() && engine.has_work()) {
    const StepResult& step = engine.step(now);
    for (const RequestEvent& e : step.events) {
      if (e.preempted) preempted.push_back(e.id);
    }
    now = step.end();
  }
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted.front(), 2u);
}

TEST(EngineScheduling, AbortStopsWorkWithinOneStepAndCountsWaste) {
  Engine engine(config(SchedulingPolicy::kFcfs, 8));
  ASSERT_TRUE(engine.submit(request(1, 300, 100), 0.0));
  ASSERT_TRUE(engine.submit(request(2, 200, 100), 0.0));
  double now = 0;
  for (int i = 0; i < 5; ++i) now = engine.step(now).end();  // 1 prefill + 4 decode steps
  const double usage_before = engine.stats().kv_cache_usage_perc;

  ASSERT_TRUE(engine.abort(1));
  EXPECT_FALSE(engine.abort(1));
  const EngineStats after_abort = engine.stats();
  EXPECT_EQ(after_abort.num_requests_running, 1u);
  EXPECT_EQ(after_abort.requests_aborted_total, 1u);
  EXPECT_EQ(after_abort.wasted_prefill_tokens_total, 300u);
  EXPECT_EQ(after_abort.wasted_decode_tokens_total, 4u);
  EXPECT_LT(after_abort.kv_cache_usage_perc, usage_before);

  const StepResult& next = engine.step(now);
  EXPECT_EQ(next.scheduled_seqs, 1u);
  for (const RequestEvent& e : next.events) EXPECT_NE(e.id, 1u);
  EXPECT_DOUBLE_EQ(next.duration, 10e-3 + 1e-3);  // one decode, nothing for request 1
}

TEST(EngineScheduling, AllWorkForAbortedRequestsIsWastedEvenAcrossPreemptions) {
  EngineConfig c = config(SchedulingPolicy::kFcfs, 8);
  c.num_blocks = 30;  // 480 tokens for six requests of 100 + 200: preemptions
  Engine engine(c);
  for (RequestId id = 0; id < 6; ++id) ASSERT_TRUE(engine.submit(request(id, 100, 200), 0.0));
  double now = 0;
  std::uint64_t prefill = 0;
  std::uint64_t decode = 0;
  for (int i = 0; i < 150; ++i) {  // fewer steps than any request needs
    const StepResult& step = engine.step(now);
    prefill += step.work.prefill_tokens;
    decode += step.work.decode_seqs;
    now = step.end();
  }
  ASSERT_GT(engine.stats().num_preemptions_total, 0u);
  // What a process dying now would lose: exactly what the aborts count.
  EXPECT_EQ(engine.in_flight_work_tokens(), prefill + decode);
  for (RequestId id = 0; id < 6; ++id) ASSERT_TRUE(engine.abort(id));
  EXPECT_EQ(engine.in_flight_work_tokens(), 0u);
  EXPECT_EQ(engine.stats().wasted_prefill_tokens_total, prefill);
  EXPECT_EQ(engine.stats().wasted_decode_tokens_total, decode);
  EXPECT_EQ(engine.stats().kv_cache_usage_perc, 0.0);
  EXPECT_FALSE(engine.has_work());
}

TEST(EngineScheduling, AbortingAWaitingRequestWastesNothing) {
  Engine engine(config(SchedulingPolicy::kFcfs, 1));
  ASSERT_TRUE(engine.submit(request(1, 50, 10), 0.0));
  ASSERT_TRUE(engine.submit(request(2, 50, 10), 0.0));
  const double now = engine.step(0.0).end();
  EXPECT_EQ(engine.stats().num_requests_waiting, 1u);
  ASSERT_TRUE(engine.abort(2));
  EXPECT_EQ(engine.stats().num_requests_waiting, 0u);
  EXPECT_EQ(engine.stats().wasted_prefill_tokens_total, 0u);
  EXPECT_EQ(engine.stats().wasted_decode_tokens_total, 0u);
  EXPECT_EQ(engine.step(now).scheduled_seqs, 1u);
}

TEST(EngineScheduling, AbortedIdCanBeReused) {
  Engine engine(config(SchedulingPolicy::kFcfs, 4));
  ASSERT_TRUE(engine.submit(request(7, 50, 10), 0.0));
  EXPECT_EQ(engine.submit(request(7, 50, 10), 0.0).error(), SubmitError::kDuplicateId);
  ASSERT_TRUE(engine.abort(7));
  EXPECT_TRUE(engine.submit(request(7, 50, 10), 1.0));
}

TEST(EngineScheduling, SubmitRejectsWhatCanNeverRun) {
  Engine engine(config(SchedulingPolicy::kFcfs, 4));
  EXPECT_EQ(engine.submit(request(1, 0, 10), 0.0).error(), SubmitError::kInvalid);
  EXPECT_EQ(engine.submit(request(2, 10, 0), 0.0).error(), SubmitError::kInvalid);
  EXPECT_EQ(engine.submit(request(3, 8000, 500), 0.0).error(), SubmitError::kTooLong);
  EngineConfig small = config(SchedulingPolicy::kFcfs, 4);
  small.num_blocks = 4;  // 64 tokens of KV
  Engine tiny(small);
  EXPECT_TRUE(tiny.submit(request(4, 60, 5), 0.0));  // 64 KV tokens: the last is never stored
  EXPECT_EQ(tiny.submit(request(5, 60, 6), 0.0).error(), SubmitError::kTooLong);
  EXPECT_FALSE(engine.has_work());
}

TEST(EngineScheduling, IdleStepDoesNothing) {
  Engine engine(config(SchedulingPolicy::kFcfs, 4));
  const StepResult& step = engine.step(3.0);
  EXPECT_EQ(step.scheduled_seqs, 0u);
  EXPECT_EQ(step.duration, 0.0);
  EXPECT_EQ(engine.stats().steps_total, 0u);
}

TEST(EngineScheduling, TimingsFeedQueueTtftAndE2e) {
  Engine engine(config(SchedulingPolicy::kFcfs, 1));
  std::vector<Arrival> arrivals{{1.0, request(1, 100, 2)}, {1.0, request(2, 100, 2)}};
  const ReplayResult result = replay(engine, std::move(arrivals));
  ASSERT_EQ(result.completed.size(), 2u);
  const double prefill = 10e-3 + 100 * 0.1e-3;
  const double decode = 10e-3 + 1e-3;
  const RequestTiming& first = result.completed[0].timing;
  EXPECT_DOUBLE_EQ(first.arrival, 1.0);
  EXPECT_DOUBLE_EQ(first.first_scheduled, 1.0);
  EXPECT_DOUBLE_EQ(first.first_token, 1.0 + prefill);
  EXPECT_DOUBLE_EQ(first.finished, 1.0 + prefill + decode);
  const RequestTiming& second = result.completed[1].timing;
  EXPECT_DOUBLE_EQ(second.first_scheduled, first.finished);  // queued behind the first
  EXPECT_DOUBLE_EQ(second.first_token, first.finished + prefill);
  EXPECT_DOUBLE_EQ(result.end_time, second.finished);
  EXPECT_NEAR(engine.stats().busy_seconds_total, 2 * (prefill + decode), 1e-12);
}

}  // namespace
}  // namespace arbiter::engine::engine_scheduling_test
