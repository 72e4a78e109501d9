// KV cache behaviour: prefix-cache hits and their effect on TTFT, LRU
// eviction, preemption on exhaustion, and the shrinking-capacity fault hook.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/prompt.hpp"
#include "engine/replay.hpp"

namespace arbiter::engine {
namespace {

constexpr double kBase = 10e-3;
constexpr double kPrefill = 0.1e-3;

EngineConfig config(std::uint32_t num_blocks) {
  return EngineConfig{
      .cost = {.base_s = kBase,
               .prefill_token_s = kPrefill,
               .decode_seq_s = 1e-3,
               .context_token_s = 0},
      .num_blocks = num_blocks,
      .block_size = 16,
      .max_num_seqs = 64,
      .max_num_batched_tokens = 8192,
      .max_model_len = 100'000,
  };
}

// A prompt of `blocks` full blocks whose content is unique to `seed`.
std::string text(std::uint32_t blocks, char seed) {
  return std::string(static_cast<std::size_t>(blocks) * 16 * kCharsPerToken, seed);
}

SubmitRequest from_text(RequestId id, const std::string& prompt, std::uint32_t output,
                        std::uint64_t salt = 0) {
  PromptBlocks blocks = prompt_blocks(prompt, 16, salt);
  return SubmitRequest{.id = id,
                       .prompt_tokens = blocks.num_tokens,
                       .block_hashes = std::move(blocks.block_hashes),
                       .output_tokens = output};
}

// Runs one request alone to completion and returns its TTFT.
double ttft_alone(Engine& engine, SubmitRequest request, double at) {
  std::vector<Arrival> arrivals{{at, std::move(request)}};
  const ReplayResult result = replay(engine, std::move(arrivals));
  EXPECT_EQ(result.completed.size(), 1u);
  const RequestTiming& t = result.completed.at(0).timing;
  return t.first_token - t.arrival;
}

TEST(EngineKv, RepeatedPrefixCutsTtftAndCountsHits) {
  Engine engine(config(1000));
  const std::string shared = text(40, 's');  // 640 tokens of shared prefix
  const double first = ttft_alone(engine, from_text(1, shared + text(10, 'a'), 4), 0.0);
  EXPECT_DOUBLE_EQ(first, kBase + 800 * kPrefill);
  EXPECT_EQ(engine.stats().prefix_cache_queries_total, 800u);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 0u);

  const double second = ttft_alone(engine, from_text(2, shared + text(10, 'b'), 4), 10.0);
  // Only the 160 tokens after the shared 640 are computed.
  EXPECT_NEAR(second, kBase + 160 * kPrefill, 1e-9);
  EXPECT_EQ(engine.stats().prefix_cache_queries_total, 1600u);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 640u);
  EXPECT_EQ(engine.stats().prefill_tokens_computed_total, 960u);
}

TEST(EngineKv, AbortedPrefillReusedLaterIsNotWasted) {
  Engine engine(config(1000));
  const std::string shared = text(40, 's');  // 640 tokens
  // A request is prefilled (one step: 800 tokens fit the budget), then aborted.
  ASSERT_TRUE(engine.submit(from_text(1, shared + text(10, 'a'), 50), 0.0));
  engine.step(0.0);
  ASSERT_TRUE(engine.abort(1));
  EXPECT_EQ(engine.stats().wasted_prefill_tokens_total, 800u);
  EXPECT_EQ(engine.stats().reused_after_cancel_tokens_total, 0u);
  // A later request with the same 640-token prefix finds it cached: that
  // part of the aborted work was not wasted. Counted once per block.
  ttft_alone(engine, from_text(2, shared + text(10, 'b'), 4), 1.0);
  EXPECT_EQ(engine.stats().reused_after_cancel_tokens_total, 640u);
  ttft_alone(engine, from_text(3, shared + text(10, 'c'), 4), 2.0);
  EXPECT_EQ(engine.stats().reused_after_cancel_tokens_total, 640u);
  EXPECT_EQ(engine.stats().reused_after_preempt_tokens_total, 0u);

  // A preempted request (the gateway's) resumed with its prompt: counted apart.
  ASSERT_TRUE(engine.submit(from_text(4, text(20, 'p'), 50), 3.0));
  engine.step(3.0);
  ASSERT_TRUE(engine.abort(4, Engine::AbortCause::kPreempt));
  ttft_alone(engine, from_text(5, text(20, 'p'), 4), 4.0);
  EXPECT_EQ(engine.stats().reused_after_preempt_tokens_total, 19u * 16);  // all but the last block
}

TEST(EngineKv, AbortedPrefillEvictedBeforeReuseStaysWasted) {
  Engine engine(config(60));  // 60 blocks: the next prompt evicts the aborted one's
  ASSERT_TRUE(engine.submit(from_text(1, text(40, 's'), 50), 0.0));
  engine.step(0.0);
  ASSERT_TRUE(engine.abort(1));
  ttft_alone(engine, from_text(2, text(59, 'x'), 4), 1.0);  // takes all 60 blocks
  ttft_alone(engine, from_text(3, text(40, 's'), 4), 2.0);
  EXPECT_EQ(engine.stats().reused_after_cancel_tokens_total, 0u);
}

TEST(EngineKv, FullyCachedPromptStillComputesItsLastBlock) {
  Engine engine(config(1000));
  const std::string prompt = text(8, 'p');  // exactly 128 tokens, all in full blocks
  ttft_alone(engine, from_text(1, prompt, 2), 0.0);
  const double again = ttft_alone(engine, from_text(2, prompt, 2), 10.0);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 112u);  // 7 of 8 blocks
  EXPECT_NEAR(again, kBase + 16 * kPrefill, 1e-9);
}

TEST(EngineKv, SaltSeparatesCaches) {
  Engine engine(config(1000));
  const std::string prompt = text(20, 'q') + "tail";
  ttft_alone(engine, from_text(1, prompt, 2, /*salt=*/1), 0.0);
  ttft_alone(engine, from_text(2, prompt, 2, /*salt=*/2), 10.0);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 0u);
}

TEST(EngineKv, DisabledPrefixCachingNeverHits) {
  EngineConfig c = config(1000);
  c.enable_prefix_caching = false;
  Engine engine(c);
  const std::string prompt = text(20, 'q') + "tail";
  ttft_alone(engine, from_text(1, prompt, 2), 0.0);
  ttft_alone(engine, from_text(2, prompt, 2), 10.0);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 0u);
  EXPECT_EQ(engine.stats().prefix_cache_queries_total, 0u);
}

TEST(EngineKv, FreedBlocksAreEvictedLeastRecentlyUsedFirst) {
  // Each prompt is 4 full blocks plus one token: 5 blocks, 4 of them cacheable.
  Engine engine(config(10));
  const std::string a = text(4, 'a') + "x";
  const std::string b = text(4, 'b') + "x";
  const std::string c = text(4, 'c') + "x";
  ttft_alone(engine, from_text(1, a, 1), 0.0);
  ttft_alone(engine, from_text(2, b, 1), 1.0);
  ttft_alone(engine, from_text(3, a, 1), 2.0);  // hit: a is now more recent than b
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 64u);
  // c needs 5 blocks; 2 free ones hold nothing, so 3 cached ones go: b's,
  // the least recently used, from its tail end.
  ttft_alone(engine, from_text(4, c, 1), 3.0);
  ttft_alone(engine, from_text(5, a, 1), 4.0);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 128u);  // a survived whole
  ttft_alone(engine, from_text(6, b, 1), 5.0);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 144u);  // only b's first block did
}

TEST(EngineKv, ExhaustionPreemptsLatestAndEveryRequestStillCompletes) {
  // 20 blocks = 320 tokens; four requests growing to 152 tokens each cannot
  // all stay resident.
  Engine engine(config(20));
  for (RequestId id = 0; id < 4; ++id) {
    ASSERT_TRUE(engine.submit(
        SubmitRequest{.id = id, .prompt_tokens = 32, .block_hashes = {}, .output_tokens = 120},
        0.0));
  }
  std::map<RequestId, std::uint32_t> tokens;
  std::map<RequestId, bool> finished;
  std::vector<RequestId> preempted;
  double now = 0;
  while (engine.has_work()) {
    const StepResult& step = engine.step(now);
    ASSERT_GT(step.scheduled_seqs, 0u);
    for (const RequestEvent& e : step.events) {
      if (e.preempted) preempted.push_back(e.id);
      if (e.token) {
        EXPECT_EQ(++tokens[e.id], e.tokens_generated);
      }
      if (e.finished) finished[e.id] = true;
    }
    EXPECT_LE(engine.stats().kv_cache_usage_perc, 1.0);
    now = step.end();
  }
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted.front(), 3u);  // FCFS: the most recently admitted goes first
  EXPECT_EQ(engine.stats().num_preemptions_total, preempted.size());
  for (RequestId id = 0; id < 4; ++id) {
    EXPECT_EQ(tokens[id], 120u) << "request " << id;
    EXPECT_TRUE(finished[id]) << "request " << id;
  }
  EXPECT_EQ(engine.stats().generation_tokens_total, 480u);
  EXPECT_EQ(engine.stats().requests_finished_total, 4u);
  // Recompute shows up as extra prefill work.
  EXPECT_GT(engine.stats().prefill_tokens_computed_total, 4u * 32u);
}

TEST(EngineKv, ShrinkingCapacityPreemptsAndRestoringLetsAllFinish) {
  Engine engine(config(100));
  for (RequestId id = 0; id < 4; ++id) {
    ASSERT_TRUE(engine.submit(
        SubmitRequest{.id = id, .prompt_tokens = 160, .block_hashes = {}, .output_tokens = 40},
        0.0));
  }
  double now = engine.step(0.0).end();  // four prompts: 40 blocks in use
  EXPECT_EQ(engine.stats().num_requests_running, 4u);

  engine.set_num_blocks(25);  // another tenant takes 75 blocks
  EXPECT_EQ(engine.stats().num_blocks, 25u);
  const StepResult& squeezed = engine.step(now);
  std::uint32_t preemptions = 0;
  for (const RequestEvent& e : squeezed.events) preemptions += e.preempted;
  EXPECT_EQ(preemptions, 2u);  // 4 x 11 blocks do not fit in 25; 2 x 11 do
  EXPECT_EQ(engine.stats().num_preemptions_total, 2u);
  EXPECT_EQ(engine.stats().num_requests_running, 2u);
  EXPECT_LE(engine.stats().kv_cache_usage_perc, 1.0);
  now = squeezed.end();

  engine.set_num_blocks(100);
  while (engine.has_work()) now = engine.step(now).end();
  EXPECT_EQ(engine.stats().requests_finished_total, 4u);
  EXPECT_EQ(engine.stats().generation_tokens_total, 160u);
}

}  // namespace
}  // namespace arbiter::engine
