// Engine model speed: the cost of one step at 256 running sequences, and a
// virtual-time run of many requests through 64 engines (discrete events:
// arrivals and step ends), reported as simulated requests per wall second.
// And the gateway's side of engine signals: parsing a busy vLLM server's
// ~50 KB /metrics answer (docs/engine-signals.md).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/engine_metrics.hpp"
#include "engine/engine.hpp"
#include "engine/profile.hpp"
#include "engine/prompt.hpp"

namespace arbiter::engine {
namespace {

EngineConfig llama_8b() { return find_profile("llama-8b-a100")->config; }

// 256 sequences decoding in steady state (they never finish within the run).
void BM_StepAt256Running(benchmark::State& state) {
  EngineConfig config = llama_8b();
  config.num_blocks = 400'000;
  config.max_model_len = 1'000'000;
  Engine engine(config);
  for (RequestId id = 0; id < 256; ++id) {
    engine.submit(
        SubmitRequest{.id = id, .prompt_tokens = 512, .block_hashes = {}, .output_tokens = 500'000},
        0.0);
  }
  double now = 0;
  for (bool prefilling = true; prefilling;) {  // finish every prefill before timing
    const StepResult& step = engine.step(now);
    prefilling = step.work.prefill_tokens > 0 || engine.stats().num_requests_waiting > 0;
    now = step.end();
  }
  for (auto _ : state) {
    const StepResult& step = engine.step(now);
    benchmark::DoNotOptimize(step.events.data());
    now = step.end();
  }
  state.counters["running"] = engine.stats().num_requests_running;
}
BENCHMARK(BM_StepAt256Running)->Iterations(20'000);

// Open-loop Poisson traffic, round-robin over 64 engines at ~80% of their
// capacity; a quarter of requests share one of 16 system prompts (prefix hits).
void BM_VirtualTime64Engines(benchmark::State& state) {
  constexpr std::size_t kEngines = 64;
  const auto requests = static_cast<std::uint64_t>(state.range(0));
  constexpr double kRatePerEngine = 12.0;  // requests/s per engine
  double simulated = 0;
  std::uint64_t tokens = 0;
  for (auto _ : state) {
    std::vector<Engine> engines;
    engines.reserve(kEngines);
    for (std::size_t i = 0; i < kEngines; ++i) engines.emplace_back(llama_8b());
    std::mt19937_64 rng(42);
    std::exponential_distribution<double> gap(kRatePerEngine * kEngines);
    std::uniform_int_distribution<std::uint32_t> prompt_len(64, 1024);
    std::uniform_int_distribution<std::uint32_t> output_len(16, 256);
    std::uniform_int_distribution<std::uint32_t> system_prompt(0, 63);  // < 16: shared

    using Due = std::pair<double, std::size_t>;  // step end, engine
    std::priority_queue<Due, std::vector<Due>, std::greater<>> busy;
    std::vector<bool> stepping(kEngines, false);
    auto run_step = [&](std::size_t e, double now) {
      const StepResult& step = engines[e].step(now);
      stepping[e] = step.scheduled_seqs > 0;
      if (stepping[e]) busy.emplace(step.end(), e);
    };

    double next_arrival = gap(rng);
    std::uint64_t submitted = 0;
    double now = 0;
    while (submitted < requests || !busy.empty()) {
      if (submitted < requests && (busy.empty() || next_arrival <= busy.top().first)) {
        now = next_arrival;
        const std::size_t e = submitted % kEngines;
        SubmitRequest request{.id = submitted,
                              .prompt_tokens = prompt_len(rng),
                              .block_hashes = {},
                              .output_tokens = output_len(rng)};
        const std::uint32_t shared = system_prompt(rng);
        if (shared < 16) {  // 512 shared tokens = 32 blocks, chained from the prompt id
          std::uint64_t h = shared;
          for (int b = 0; b < 32; ++b) request.block_hashes.push_back(h = hash_bytes("blk", h));
          request.prompt_tokens += 512;
        }
        engines[e].submit(std::move(request), now);
        ++submitted;
        next_arrival += gap(rng);
        if (!stepping[e]) run_step(e, now);
      } else {
        const auto [end, e] = busy.top();
        busy.pop();
        now = end;
        run_step(e, now);
      }
    }
    simulated = now;
    tokens = 0;
    for (const Engine& engine : engines) tokens += engine.stats().generation_tokens_total;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * requests));
  state.counters["simulated_s"] = simulated;
  state.counters["sim_s_per_wall_s"] = benchmark::Counter(
      simulated * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["output_tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_VirtualTime64Engines)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// Eight models' series, each a 50-bucket latency histogram around the three
// gauges the gateway reads: what a vLLM server with several models exposes.
void BM_ParseVllmMetrics50KB(benchmark::State& state) {
  std::string body;
  for (int model = 0; model < 8; ++model) {
    const std::string labels = fmt::format(R"(engine="0",model_name="org/model-{}-70B-Instruct")", model);
    body += "# TYPE vllm:e2e_request_latency_seconds histogram\n";
    for (int le = 0; le < 50; ++le) {
      body += fmt::format("vllm:e2e_request_latency_seconds_bucket{{{},le=\"{:.2f}\"}} {}.0\n", labels, le * 0.25,
                          le * 17);
    }
    body += fmt::format("vllm:num_requests_waiting{{{}}} 1.0\nvllm:num_requests_running{{{}}} 8.0\n"
                        "vllm:kv_cache_usage_perc{{{}}} 0.0{}\n",
                        labels, labels, labels, model + 1);
  }
  for (auto _ : state) benchmark::DoNotOptimize(parse_engine_load(body));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_ParseVllmMetrics50KB);

}  // namespace
}  // namespace arbiter::engine
