// The simulator's /metrics text: vLLM's names, labels and meanings, sampled
// from EngineStats.
#include <gtest/gtest.h>

#include "engine/profile.hpp"
#include "sim/sim_metrics.hpp"

namespace arbiter::sim {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(SimMetrics, RendersVllmNamesFromStats) {
  const engine::EngineConfig config = engine::find_profile("tiny")->config;
  SimMetrics metrics("m1", config);
  engine::EngineStats s;
  s.num_requests_running = 3;
  s.num_requests_waiting = 2;
  s.kv_cache_usage_perc = 0.25;
  s.prefix_cache_queries_total = 100;
  s.prefix_cache_hits_total = 40;
  s.num_preemptions_total = 1;
  s.prompt_tokens_total = 90;
  s.generation_tokens_total = 70;
  s.requests_aborted_total = 4;
  s.wasted_prefill_tokens_total = 11;
  s.wasted_decode_tokens_total = 12;
  s.reused_after_cancel_tokens_total = 5;
  s.reused_after_preempt_tokens_total = 2;
  s.busy_seconds_total = 1.5;
  s.num_blocks = 100;
  metrics.observe_finished({.arrival = 1, .first_scheduled = 1.5, .first_token = 2, .finished = 4}, true);
  metrics.count_fault(InjectedFault::kHang);
  metrics.count_request();
  metrics.count_request();
  const std::string text = metrics.render(s, 321);
  const std::string l = R"({model_name="m1",engine="0"})";
  EXPECT_TRUE(has_line(text, "vllm:num_requests_running" + l + " 3")) << text;
  EXPECT_TRUE(has_line(text, "vllm:num_requests_waiting" + l + " 2"));
  EXPECT_TRUE(has_line(text, "vllm:kv_cache_usage_perc" + l + " 0.25"));
  EXPECT_TRUE(has_line(text, "vllm:prefix_cache_queries_total" + l + " 100"));
  EXPECT_TRUE(has_line(text, "vllm:prefix_cache_hits_total" + l + " 40"));
  EXPECT_TRUE(has_line(text, "vllm:num_preemptions_total" + l + " 1"));
  EXPECT_TRUE(has_line(text, "vllm:prompt_tokens_total" + l + " 90"));
  EXPECT_TRUE(has_line(text, "vllm:generation_tokens_total" + l + " 70"));
  EXPECT_TRUE(has_line(text, R"(vllm:cache_config_info{model_name="m1",engine="0",block_size="16",num_gpu_blocks="4096",enable_prefix_caching="True"} 1)"));
  EXPECT_TRUE(has_line(text, R"(vllm:request_success_total{model_name="m1",engine="0",finished_reason="length"} 1)"));
  EXPECT_TRUE(has_line(text, "vllm:time_to_first_token_seconds_sum" + l + " 1"));
  EXPECT_TRUE(has_line(text, "vllm:e2e_request_latency_seconds_sum" + l + " 3"));
  EXPECT_TRUE(has_line(text, "vllm:request_queue_time_seconds_sum" + l + " 0.5"));
  EXPECT_TRUE(has_line(text, R"(vllm:e2e_request_latency_seconds_bucket{model_name="m1",engine="0",le="2.5"} 0)"));
  EXPECT_TRUE(has_line(text, R"(vllm:e2e_request_latency_seconds_bucket{model_name="m1",engine="0",le="5"} 1)"));
  EXPECT_TRUE(has_line(text, "arbiter_sim_kv_blocks_usable" + l + " 100"));
  EXPECT_TRUE(has_line(text, "arbiter_sim_requests_aborted_total" + l + " 4"));
  EXPECT_TRUE(has_line(text, "arbiter_sim_requests_received_total" + l + " 2"));
  EXPECT_TRUE(has_line(text, "arbiter_sim_in_flight_work_tokens" + l + " 321"));
  EXPECT_TRUE(has_line(text, R"(arbiter_sim_wasted_tokens_total{model_name="m1",engine="0",kind="prefill"} 11)"));
  EXPECT_TRUE(has_line(text, R"(arbiter_sim_wasted_tokens_total{model_name="m1",engine="0",kind="decode"} 12)"));
  EXPECT_TRUE(has_line(text, "arbiter_sim_wasted_tokens_reused_total" + l + " 7"));
  EXPECT_TRUE(has_line(text, R"(arbiter_sim_faults_injected_total{model_name="m1",engine="0",kind="hang"} 1)"));
  EXPECT_TRUE(has_line(text, "arbiter_sim_busy_seconds_total" + l + " 1.5"));
  EXPECT_TRUE(has_line(text, "# TYPE vllm:num_preemptions_total counter"));
  EXPECT_TRUE(has_line(text, "# TYPE vllm:kv_cache_usage_perc gauge"));

  // Counters follow the engine's totals on the next scrape.
  s.generation_tokens_total = 75;
  EXPECT_TRUE(has_line(metrics.render(s, 0), "vllm:generation_tokens_total" + l + " 75"));
}

}  // namespace
}  // namespace arbiter::sim
