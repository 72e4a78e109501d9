// LoRA adapters in the engine model: at most max_loras adapters run in a
// step, a request whose adapter finds no free GPU slot waits while others
// pass it, loading an adapter costs lora_load_s once, prefix caching keeps
// adapters apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "engine/engine.hpp"
#include "engine/replay.hpp"

namespace arbiter::engine::engine_lora_test {
namespace {

EngineConfig config(std::uint32_t max_loras, double load_s) {
  return EngineConfig{
      .cost = {.base_s = 10e-3, .prefill_token_s = 0.1e-3, .decode_seq_s = 1e-3, .context_token_s = 0},
      .num_blocks = 1000,
      .block_size = 16,
      .max_num_seqs = 8,
      .max_num_batched_tokens = 4096,
      .max_model_len = 8192,
      .max_loras = max_loras,
      .lora_load_s = load_s,
  };
}

SubmitRequest request(RequestId id, std::uint32_t adapter, std::uint32_t output = 5) {
  return SubmitRequest{.id = id, .prompt_tokens = 32, .block_hashes = {}, .output_tokens = output, .adapter = adapter};
}

std::map<RequestId, RequestTiming> timings(const ReplayResult& result) {
  std::map<RequestId, RequestTiming> out;
  for (const Completed& c : result.completed) out[c.id] = c.timing;
  return out;
}

TEST(EngineLora, OneSlotRunsOneAdapterAtATimeAndLetsItsOwnRequestsPass) {
  Engine engine(config(/*max_loras=*/1, /*load_s=*/0));
  // 1 (adapter 7) runs; 2 (adapter 9) must wait for a free slot; 3 (adapter
  // 7 again) passes 2, as vLLM passes over a request whose adapter has no slot.
  ReplayResult r = replay(engine, {{0.0, request(1, 7, 20)}, {0.0, request(2, 9)}, {0.0, request(3, 7)}});
  ASSERT_EQ(r.completed.size(), 3u);
  const auto t = timings(r);
  EXPECT_EQ(t.at(1).first_scheduled, t.at(3).first_scheduled);
  EXPECT_GE(t.at(2).first_scheduled, std::max(t.at(1).finished, t.at(3).finished));
  EXPECT_EQ(engine.stats().lora_loads_total, 2u);
}

TEST(EngineLora, TwoSlotsRunTwoAdaptersTogether) {
  Engine engine(config(/*max_loras=*/2, /*load_s=*/0));
  ReplayResult r = replay(engine, {{0.0, request(1, 7, 20)}, {0.0, request(2, 9)}, {0.0, request(3, 11)}});
  const auto t = timings(r);
  EXPECT_EQ(t.at(1).first_scheduled, t.at(2).first_scheduled);
  EXPECT_GE(t.at(3).first_scheduled, t.at(2).finished);  // the third adapter waits for a slot
}

TEST(EngineLora, BaseModelRequestsNeedNoSlot) {
  Engine engine(config(/*max_loras=*/1, /*load_s=*/0));
  ReplayResult r = replay(engine, {{0.0, request(1, 7, 20)}, {0.0, request(2, 0)}, {0.0, request(3, 0)}});
  const auto t = timings(r);
  EXPECT_EQ(t.at(1).first_scheduled, t.at(2).first_scheduled);
  EXPECT_EQ(t.at(1).first_scheduled, t.at(3).first_scheduled);
  EXPECT_EQ(engine.stats().lora_loads_total, 1u);
}

TEST(EngineLora, LoadingAnAdapterCostsItsStepOnceAndAResidentOneNothing) {
  const double load = 0.5;
  Engine engine(config(/*max_loras=*/1, load));
  ASSERT_TRUE(engine.submit(request(1, 7, 1), 0.0));
  const double first = engine.step(0.0).duration;
  ASSERT_TRUE(engine.submit(request(2, 7, 1), 1.0));
  const double again = engine.step(1.0).duration;
  EXPECT_NEAR(first - again, load, 1e-9);
  ASSERT_TRUE(engine.submit(request(3, 9, 1), 2.0));  // the slot is free: 9 replaces 7
  EXPECT_NEAR(engine.step(2.0).duration - again, load, 1e-9);
  EXPECT_EQ(engine.stats().lora_loads_total, 2u);
}

TEST(EngineLora, LeastRecentlyUsedIdleAdapterIsEvicted) {
  Engine engine(config(/*max_loras=*/2, /*load_s=*/0));
  std::uint64_t id = 0;
  for (std::uint32_t adapter : {7u, 9u, 7u, 11u, 7u}) {  // 11 replaces 9, the older one: 7 stays loaded
    ++id;  // before the call: its arguments are evaluated in no set order
    ASSERT_TRUE(engine.submit(request(id, adapter, 1), static_cast<double>(id)));
    engine.step(static_cast<double>(id));
  }
  EXPECT_EQ(engine.stats().lora_loads_total, 3u);
}

TEST(EngineLora, PrefixCacheIsKeptPerAdapter) {
  Engine engine(config(/*max_loras=*/2, /*load_s=*/0));
  const std::vector<std::uint64_t> hashes{11, 12};
  auto with_prefix = [&](RequestId id, std::uint32_t adapter) {
    SubmitRequest req = request(id, adapter, 1);
    req.block_hashes = hashes;
    return req;
  };
  ASSERT_TRUE(engine.submit(with_prefix(1, 7), 0.0));
  engine.step(0.0);
  ASSERT_TRUE(engine.submit(with_prefix(2, 9), 1.0));  // same prompt, another adapter: no hit
  engine.step(1.0);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 0u);
  ASSERT_TRUE(engine.submit(with_prefix(3, 7), 2.0));  // the first adapter again: its blocks
  engine.step(2.0);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 16u);  // one full block (the last token is computed)
}

TEST(EngineLora, AdaptersOfRunningAndWaitingRequestsAreListed) {
  Engine engine(config(/*max_loras=*/1, /*load_s=*/0));
  ASSERT_TRUE(engine.submit(request(1, 7, 20), 0.0));
  ASSERT_TRUE(engine.submit(request(2, 9), 0.0));
  ASSERT_TRUE(engine.submit(request(3, 7), 0.0));
  engine.step(0.0);
  std::vector<std::uint32_t> running, waiting;
  engine.lora_adapters(running, waiting);
  EXPECT_EQ(running, std::vector<std::uint32_t>{7});
  EXPECT_EQ(waiting, std::vector<std::uint32_t>{9});
  ASSERT_TRUE(engine.abort(1));
  ASSERT_TRUE(engine.abort(3));
  engine.step(1.0);  // the slot is free again: 9 is loaded and runs
  engine.lora_adapters(running, waiting);
  EXPECT_EQ(running, std::vector<std::uint32_t>{9});
  EXPECT_TRUE(waiting.empty());
}

TEST(EngineLora, ZeroSlotsIsAConfigError) {
  EngineConfig c = config(0, 0);
  EXPECT_FALSE(config_error(c).empty());
  c.max_loras = 1;
  c.lora_load_s = -1;
  EXPECT_FALSE(config_error(c).empty());
}

}  // namespace
}  // namespace arbiter::engine::engine_lora_test
