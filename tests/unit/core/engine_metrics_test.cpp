#include "core/engine_metrics.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace arbiter {
namespace {

using namespace std::chrono_literals;

// A vLLM v1 /metrics body as the server writes it: process and Python
// families first, then vLLM's gauges, counters, histograms and info.
constexpr std::string_view kVllmBody = R"(# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 14503.0
python_gc_objects_collected_total{generation="1"} 3214.0
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 3.291197440e+09
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.4123
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 123456.0
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="meta-llama/Llama-3.1-8B-Instruct"} 901.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 51.3
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 400.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 913.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 913.0
# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase for request.
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{engine="0",le="0.3",model_name="meta-llama/Llama-3.1-8B-Instruct"} 800.0
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 913.0
vllm:request_queue_time_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 913.0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",num_gpu_blocks="27428"} 1.0
)";

// SGLang with --enable-metrics.
constexpr std::string_view kSglangBody = R"(# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="Qwen/Qwen2.5-7B-Instruct"} 12.0
# HELP sglang:num_used_tokens The number of used tokens.
# TYPE sglang:num_used_tokens gauge
sglang:num_used_tokens{model_name="Qwen/Qwen2.5-7B-Instruct"} 48213.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="Qwen/Qwen2.5-7B-Instruct"} 0.37
# HELP sglang:gen_throughput The generation throughput (token/s).
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{model_name="Qwen/Qwen2.5-7B-Instruct"} 1512.3
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="Qwen/Qwen2.5-7B-Instruct"} 4.0
# HELP sglang:cache_hit_rate The prefix cache hit rate.
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="Qwen/Qwen2.5-7B-Instruct"} 0.52
# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="Qwen/Qwen2.5-7B-Instruct"} 1.234e+06
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="Qwen/Qwen2.5-7B-Instruct"} 10.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="Qwen/Qwen2.5-7B-Instruct"} 40.0
sglang:time_to_first_token_seconds_count{model_name="Qwen/Qwen2.5-7B-Instruct"} 40.0
)";

// llama.cpp server started with --metrics: no labels, integer values.
constexpr std::string_view kLlamaCppBody = R"(# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1234
# HELP llamacpp:prompt_seconds_total Prompt process time
# TYPE llamacpp:prompt_seconds_total counter
llamacpp:prompt_seconds_total 3.12
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 5678
# HELP llamacpp:n_decode_total Total number of llama_decode() calls
# TYPE llamacpp:n_decode_total counter
llamacpp:n_decode_total 5000
# HELP llamacpp:n_busy_slots_per_decode Average number of busy slots per llama_decode() call
# TYPE llamacpp:n_busy_slots_per_decode counter
llamacpp:n_busy_slots_per_decode 1.7
# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s.
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 125.6
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 1
)";

// --- Parsing ----------------------------------------------------------------

TEST(EngineMetrics, ReadsVllmGaugesAndSkipsEverythingElse) {
  const EngineLoad load = parse_engine_load(kVllmBody);
  EXPECT_EQ(load.flavour, EngineFlavour::kVllm);
  EXPECT_EQ(load.waiting, 2.0);
  EXPECT_EQ(load.running, 7.0);
  EXPECT_DOUBLE_EQ(load.kv_usage.value_or(-1), 0.4123);
  EXPECT_TRUE(load.has_figures());
}

TEST(EngineMetrics, ReadsTheKvCacheSizeFromVllmsCacheConfigInfo) {
  // vLLM's info gauge: the figures are labels (order and extra labels vary).
  const EngineLoad load = parse_engine_load(
      "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"True\","
      "num_gpu_blocks=\"27000\",swap_space_bytes=\"4294967296\"} 1.0\n"
      "vllm:num_requests_running{model_name=\"m\"} 0\n");
  EXPECT_EQ(load.kv_cache_tokens, 432'000u);
  EXPECT_EQ(load.running, 0.0);  // the load figures are read as before
  // Without both labels, or with a number that is not one, there is none;
  // and it alone does not make a scrape usable.
  EXPECT_FALSE(parse_engine_load("vllm:cache_config_info{block_size=\"16\"} 1\n").kv_cache_tokens);
  EXPECT_FALSE(parse_engine_load("vllm:cache_config_info{num_gpu_blocks=\"1e3\",block_size=\"16\"} 1\n")
                   .kv_cache_tokens);
  const EngineLoad only_info =
      parse_engine_load("vllm:cache_config_info{num_gpu_blocks=\"100\",block_size=\"16\"} 1\n");
  EXPECT_EQ(only_info.kv_cache_tokens, 1600u);
  EXPECT_FALSE(only_info.has_figures());
  // A label whose name ends like the one looked for is not it.
  EXPECT_FALSE(parse_engine_load("vllm:cache_config_info{old_num_gpu_blocks=\"9\",block_size=\"16\"} 1\n")
                   .kv_cache_tokens);
  // Found by fuzzing (fuzz_engine_metrics): 2^62 blocks of 16 wrapped to 0 tokens. A size
  // past 64 bits is not read; the largest that fits is.
  EXPECT_FALSE(parse_engine_load("vllm:cache_config_info{num_gpu_blocks=\"4611686018427387904\",block_size=\"16\"} 1\n")
                   .kv_cache_tokens);
  EXPECT_EQ(parse_engine_load("vllm:cache_config_info{num_gpu_blocks=\"1152921504606846975\",block_size=\"16\"} 1\n")
                .kv_cache_tokens,
            1152921504606846975u * 16);
}

TEST(EngineMetrics, ReadsSglangGauges) {
  const EngineLoad load = parse_engine_load(kSglangBody);
  EXPECT_EQ(load.flavour, EngineFlavour::kSglang);
  EXPECT_EQ(load.waiting, 4.0);
  EXPECT_EQ(load.running, 12.0);
  EXPECT_DOUBLE_EQ(load.kv_usage.value_or(-1), 0.37);
}

TEST(EngineMetrics, ReadsThePrefixCacheCountersForTheLoadCoefficient) {
  // Both counters, summed over data-parallel engines.
  const EngineLoad load = parse_engine_load(
      "vllm:prefix_cache_queries_total{engine=\"0\"} 1000\n"
      "vllm:prefix_cache_queries_total{engine=\"1\"} 3000\n"
      "vllm:prefix_cache_hits_total{engine=\"0\"} 500\n"
      "vllm:prefix_cache_hits_total{engine=\"1\"} 2500\n"
      "vllm:num_requests_running 1\n");
  ASSERT_TRUE(load.prefix_cache);
  EXPECT_EQ(load.prefix_cache->queries, 4000.0);
  EXPECT_EQ(load.prefix_cache->hits, 3000.0);
  // One counter without the other is no reading.
  EXPECT_FALSE(parse_engine_load(kVllmBody).prefix_cache);
  // SGLang's own rate: the lowest series, clamped to [0, 1].
  const EngineLoad sglang = parse_engine_load(
      "sglang:cache_hit_rate{dp=\"0\"} 0.8\nsglang:cache_hit_rate{dp=\"1\"} 0.6\nsglang:num_queue_reqs 0\n");
  EXPECT_DOUBLE_EQ(sglang.cache_hit_rate.value_or(-1), 0.6);
  EXPECT_DOUBLE_EQ(parse_engine_load("sglang:cache_hit_rate 1.5\n").cache_hit_rate.value_or(-1), 1.0);
}

TEST(EngineMetrics, ReadsLlamaCppGaugesWithoutLabels) {
  const EngineLoad load = parse_engine_load(kLlamaCppBody);
  EXPECT_EQ(load.flavour, EngineFlavour::kLlamaCpp);
  EXPECT_EQ(load.waiting, 1.0);
  EXPECT_EQ(load.running, 2.0);
  EXPECT_FALSE(load.kv_usage);  // current llama.cpp servers do not export it
}

TEST(EngineMetrics, ReadsTheOlderLlamaCppKvRatio) {
  const EngineLoad load =
      parse_engine_load("llamacpp:kv_cache_usage_ratio 0.25\nllamacpp:requests_deferred 0\n");
  EXPECT_EQ(load.kv_usage, 0.25);
  EXPECT_EQ(load.waiting, 0.0);
}

TEST(EngineMetrics, SumsCountsAndTakesTheFullestKvOverSeries) {
  // Two data-parallel engines and two models behind one port.
  const EngineLoad load = parse_engine_load(
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"a\"} 1\n"
      "vllm:num_requests_waiting{engine=\"1\",model_name=\"a\"} 2\n"
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"b\"} 4\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"a\"} 10\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"a\"} 20\n"
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"a\"} 0.5\n"
      "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"a\"} 0.93\n"
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"b\"} 0.2\n");
  EXPECT_EQ(load.waiting, 7.0);
  EXPECT_EQ(load.running, 30.0);
  EXPECT_EQ(load.kv_usage, 0.93);
}

TEST(EngineMetrics, ReadsTheOldVllmKvNameAndPrefersTheNewOne) {
  const EngineLoad old_only = parse_engine_load(
      "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.66\nvllm:num_requests_waiting{model_name=\"m\"} 0\n");
  EXPECT_EQ(old_only.kv_usage, 0.66);

  const EngineLoad both = parse_engine_load(
      "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.66\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.12\n");
  EXPECT_EQ(both.kv_usage, 0.12);
}

TEST(EngineMetrics, HandlesCrlfTimestampsTabsAndExponents) {
  const EngineLoad load = parse_engine_load(
      "# HELP vllm:num_requests_waiting Waiting.\r\n"
      "# TYPE vllm:num_requests_waiting gauge\r\n"
      "vllm:num_requests_waiting{model_name=\"m\"} 3 1700000000000\r\n"
      "vllm:num_requests_running\t1.5e1\r\n"
      "\r\n"
      "   vllm:kv_cache_usage_perc{model_name=\"m\"}   9.5E-1   1700000000000\r\n");
  EXPECT_EQ(load.waiting, 3.0);
  EXPECT_EQ(load.running, 15.0);
  EXPECT_EQ(load.kv_usage, 0.95);
}

TEST(EngineMetrics, IgnoresNanAndInfiniteSamples) {
  const EngineLoad load = parse_engine_load(
      "vllm:num_requests_waiting{engine=\"0\"} NaN\n"
      "vllm:num_requests_waiting{engine=\"1\"} 2\n"
      "vllm:num_requests_running{engine=\"0\"} +Inf\n"
      "vllm:num_requests_running{engine=\"1\"} -Inf\n"
      "vllm:kv_cache_usage_perc{engine=\"0\"} nan\n");
  EXPECT_EQ(load.waiting, 2.0);
  EXPECT_FALSE(load.running);
  EXPECT_FALSE(load.kv_usage);
  EXPECT_EQ(load.flavour, EngineFlavour::kVllm);
}

TEST(EngineMetrics, LabelValuesMayHoldBracesQuotesAndSpaces) {
  const EngineLoad load = parse_engine_load(
      "vllm:num_requests_waiting{model_name=\"odd} \\\"name\\\" 99\",engine=\"0\",} 5\n"
      "vllm:num_requests_running{model_name=\"back\\\\slash\"} 6\n");
  EXPECT_EQ(load.waiting, 5.0);
  EXPECT_EQ(load.running, 6.0);
}

TEST(EngineMetrics, MatchesWholeNamesOnly) {
  const EngineLoad load = parse_engine_load(
      "# vllm:num_requests_waiting 100\n"
      "vllm:num_requests_waiting_by_reason{reason=\"capacity\"} 9\n"
      "vllm:num_requests_waiting_total 8\n"
      "xvllm:num_requests_waiting 7\n"
      "vllm:num_requests_waitin 6\n"
      "sglang:num_queue_reqs_total 5\n"
      "vllm:num_requests_waiting 1\n");
  EXPECT_EQ(load.waiting, 1.0);
  EXPECT_FALSE(load.running);
}

TEST(EngineMetrics, SkipsMalformedLines) {
  const EngineLoad load = parse_engine_load(
      "vllm:num_requests_waiting{engine=\"0\" 5\n"   // label set never closed
      "vllm:num_requests_waiting{engine=\"0\"} abc\n"
      "vllm:num_requests_waiting{engine=\"0\"} 12abc\n"
      "vllm:num_requests_running\n"                  // no value
      "vllm:num_requests_running{engine=\"0\"}\n"
      "vllm:kv_cache_usage_perc{engine=\"0\"} 0.5");  // last line, no newline
  EXPECT_FALSE(load.waiting);
  EXPECT_FALSE(load.running);
  EXPECT_EQ(load.kv_usage, 0.5);
}

TEST(EngineMetrics, ReadsOpenMetricsWithExemplarsAndEof) {
  const EngineLoad load = parse_engine_load(
      "# TYPE sglang:num_queue_reqs gauge\n"
      "sglang:num_queue_reqs{model_name=\"m\"} 2 # {trace_id=\"abc\"} 1.0\n"
      "sglang:num_running_reqs{model_name=\"m\"} 3\n"
      "# EOF\n");
  EXPECT_EQ(load.waiting, 2.0);
  EXPECT_EQ(load.running, 3.0);
}

TEST(EngineMetrics, ForeignOrEmptyBodiesHaveNoFigures) {
  for (std::string_view body : {std::string_view{}, std::string_view{"\n\n# just comments\n"},
                                std::string_view{"arbiter_requests_total{model=\"m\"} 5\nup 1\n"},
                                std::string_view{"<html><body>Not Found</body></html>"}}) {
    const EngineLoad load = parse_engine_load(body);
    EXPECT_FALSE(load.has_figures()) << body;
    EXPECT_EQ(load.flavour, EngineFlavour::kUnknown) << body;
  }
}

TEST(EngineMetrics, FlavourComesFromAnyEngineSampleEvenWithoutFigures) {
  const EngineLoad load = parse_engine_load(
      "vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 3\nvllm:prompt_tokens_total 10\n");
  EXPECT_EQ(load.flavour, EngineFlavour::kVllm);
  EXPECT_FALSE(load.has_figures());
  EXPECT_EQ(flavour_name(load.flavour), "vllm");
  EXPECT_EQ(flavour_name(EngineFlavour::kSglang), "sglang");
  EXPECT_EQ(flavour_name(EngineFlavour::kLlamaCpp), "llamacpp");
  EXPECT_EQ(flavour_name(EngineFlavour::kUnknown), "unknown");
}

// A body of about 50 KB, like a busy vLLM server with several models: 400
// histogram series around the gauges.
std::string large_vllm_body() {
  std::string body;
  for (int model = 0; model < 8; ++model) {
    const std::string labels =
        "engine=\"0\",model_name=\"org/model-" + std::to_string(model) + "-70B-Instruct\"";
    body += "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.\n";
    body += "# TYPE vllm:e2e_request_latency_seconds histogram\n";
    for (int bucket = 0; bucket < 50; ++bucket) {
      body += "vllm:e2e_request_latency_seconds_bucket{" + labels + ",le=\"" +
              std::to_string(bucket * 0.25) + "\"} " + std::to_string(bucket * 17) + ".0\n";
    }
    body += "vllm:num_requests_waiting{" + labels + "} 1.0\n";
    body += "vllm:num_requests_running{" + labels + "} 8.0\n";
    body += "vllm:kv_cache_usage_perc{" + labels + "} 0.0" + std::to_string(model + 1) + "\n";
  }
  return body;
}

// Its speed is engine_bench's BM_ParseVllmMetrics50KB, not timed here.
TEST(EngineMetrics, ReadsTheGaugesOutOfA50KbBody) {
  const std::string body = large_vllm_body();
  ASSERT_GT(body.size(), 40'000u);
  const EngineLoad load = parse_engine_load(body);
  EXPECT_EQ(load.waiting, 8.0);
  EXPECT_EQ(load.running, 64.0);
  EXPECT_EQ(load.kv_usage, 0.08);
}

// --- Scrape outcomes ----------------------------------------------------------

TEST(EngineMetrics, ClassifiesAnswers) {
  const EngineLoad figures = parse_engine_load(kLlamaCppBody);
  const EngineLoad none;
  EXPECT_EQ(classify_answer(200, figures), ScrapeOutcome::kOk);
  EXPECT_EQ(classify_answer(200, none), ScrapeOutcome::kUnusable);
  EXPECT_EQ(classify_answer(404, none), ScrapeOutcome::kUnusable);
  EXPECT_EQ(classify_answer(501, none), ScrapeOutcome::kUnusable);  // llama.cpp without --metrics
  EXPECT_EQ(classify_answer(500, none), ScrapeOutcome::kUnusable);
  EXPECT_EQ(classify_answer(502, none), ScrapeOutcome::kFailed);
  EXPECT_EQ(classify_answer(503, none), ScrapeOutcome::kFailed);  // still loading the model
  EXPECT_EQ(classify_answer(504, none), ScrapeOutcome::kFailed);
}

// --- Verdict ------------------------------------------------------------------

class EngineVerdict : public ::testing::Test {
 protected:
  // A backend last scraped successfully at t0 with these figures.
  MonitorState scraped(std::optional<double> waiting, std::optional<double> kv) {
    EngineLoad load;
    load.waiting = waiting;
    load.running = 4;
    load.kv_usage = kv;
    MonitorState state;
    state.last_success = t0 - 1h;  // anything older, replaced below
    record_scrape(state, ScrapeOutcome::kOk, load, t0);
    return state;
  }

  const sched::TimePoint t0 = sched::TimePoint{} + 1000h;
  SignalRules rules;
};

TEST_F(EngineVerdict, IdleBackendIsClear) {
  const auto signal = judge(scraped(0, 0.3), t0 + 50ms, rules);
  EXPECT_FALSE(signal.saturated);
  EXPECT_FALSE(signal.stale);
  EXPECT_FALSE(signal.down);
  EXPECT_EQ(signal.engine_running, 4u);  // the running count is passed on
  // A stale scrape's count is not.
  EXPECT_EQ(judge(scraped(0, 0.3), t0 + 1h, rules).engine_running, 0u);
}

TEST_F(EngineVerdict, SaturatedWhenTheEngineQueues) {
  EXPECT_TRUE(judge(scraped(3, 0.3), t0, rules).saturated);
  EXPECT_TRUE(judge(scraped(1, std::nullopt), t0, rules).saturated);  // llama.cpp: no KV figure
  EXPECT_FALSE(judge(scraped(0, std::nullopt), t0, rules).saturated);
  rules.max_waiting = 2;
  EXPECT_FALSE(judge(scraped(2, 0.3), t0, rules).saturated);
  EXPECT_TRUE(judge(scraped(3, 0.3), t0, rules).saturated);
}

TEST_F(EngineVerdict, SaturatedWhenKvUsageIsOverTheThreshold) {
  EXPECT_TRUE(judge(scraped(0, 0.95), t0, rules).saturated);
  EXPECT_FALSE(judge(scraped(0, 0.9), t0, rules).saturated);  // strictly above
  EXPECT_FALSE(judge(scraped(std::nullopt, 0.89), t0, rules).saturated);
  rules.kv_threshold = 0.8;
  EXPECT_TRUE(judge(scraped(0, 0.85), t0, rules).saturated);
}

TEST_F(EngineVerdict, StaleAfterTwoSecondsWithoutFigures) {
  const MonitorState state = scraped(5, 0.99);
  EXPECT_FALSE(judge(state, t0 + 2s, rules).stale);
  const auto late = judge(state, t0 + 2s + 1ms, rules);
  EXPECT_TRUE(late.stale);
  EXPECT_FALSE(late.saturated);  // old figures say nothing any more
  EXPECT_FALSE(late.down);       // no failed scrape: just no fresh figures
  rules.stale_after = 500ms;
  EXPECT_TRUE(judge(state, t0 + 501ms, rules).stale);
}

TEST_F(EngineVerdict, AnswersWithoutFiguresKeepItUpButLetItGoStale) {
  MonitorState state = scraped(0, 0.1);
  record_scrape(state, ScrapeOutcome::kFailed, {}, t0 + 100ms);
  record_scrape(state, ScrapeOutcome::kFailed, {}, t0 + 200ms);
  record_scrape(state, ScrapeOutcome::kUnusable, {}, t0 + 300ms);  // e.g. a 404
  EXPECT_EQ(state.consecutive_failures, 0u);
  EXPECT_EQ(state.last_success, t0);
  EXPECT_FALSE(judge(state, t0 + 300ms, rules).down);
  EXPECT_TRUE(judge(state, t0 + 3s, rules).stale);
}

TEST_F(EngineVerdict, DownAfterThreeFailuresAndUpAfterOneSuccess) {
  MonitorState state = scraped(0, 0.1);
  record_scrape(state, ScrapeOutcome::kFailed, {}, t0 + 100ms);
  record_scrape(state, ScrapeOutcome::kFailed, {}, t0 + 200ms);
  EXPECT_FALSE(judge(state, t0 + 200ms, rules).down);
  record_scrape(state, ScrapeOutcome::kFailed, {}, t0 + 300ms);
  auto signal = judge(state, t0 + 300ms, rules);
  EXPECT_TRUE(signal.down);
  EXPECT_FALSE(signal.stale);
  signal = judge(state, t0 + 5s, rules);
  EXPECT_TRUE(signal.down);
  EXPECT_TRUE(signal.stale);

  EngineLoad busy;
  busy.waiting = 2;
  record_scrape(state, ScrapeOutcome::kOk, busy, t0 + 6s);
  signal = judge(state, t0 + 6s, rules);
  EXPECT_FALSE(signal.down);
  EXPECT_FALSE(signal.stale);
  EXPECT_TRUE(signal.saturated);  // back with the new figures at once
  EXPECT_EQ(state.load, busy);
}

TEST_F(EngineVerdict, FailureThresholdIsConfigurableAndAtLeastOne) {
  MonitorState state = scraped(0, 0.1);
  record_scrape(state, ScrapeOutcome::kFailed, {}, t0);
  rules.failures_before_down = 0;
  EXPECT_TRUE(judge(state, t0, rules).down);
  rules.failures_before_down = 2;
  EXPECT_FALSE(judge(state, t0, rules).down);
  record_scrape(state, ScrapeOutcome::kFailed, {}, t0);
  EXPECT_TRUE(judge(state, t0, rules).down);
}

// An engine under load can take seconds to render /metrics while it serves
// well: scrapes that only pass their deadline make it stale (its figures
// ignored), and down only after silence_before_down without any answer. A
// refusal in the run (the process gone) makes it down after three, as before.
TEST_F(EngineVerdict, ScrapesThatOnlyTimeOutMakeItDownOnlyAfterTheSilenceRule) {
  MonitorState state = scraped(0, 0.1);
  for (int i = 1; i <= 5; ++i) record_scrape(state, ScrapeOutcome::kSilent, {}, t0 + i * 500ms);
  EXPECT_EQ(state.consecutive_failures, 5u);
  EXPECT_EQ(state.consecutive_silent, 5u);
  auto signal = judge(state, t0 + 2500ms, rules);
  EXPECT_FALSE(signal.down);
  EXPECT_TRUE(signal.stale);
  EXPECT_FALSE(judge(state, t0 + 10s - 1ms, rules).down);
  EXPECT_TRUE(judge(state, t0 + 10s, rules).down);  // hung: down
  rules.silence_before_down = 4s;
  EXPECT_TRUE(judge(state, t0 + 4s, rules).down);

  // A refusal in the run: down from the third failure, silence or not.
  rules.silence_before_down = 10s;
  MonitorState refused = scraped(0, 0.1);
  record_scrape(refused, ScrapeOutcome::kSilent, {}, t0 + 100ms);
  record_scrape(refused, ScrapeOutcome::kSilent, {}, t0 + 200ms);
  record_scrape(refused, ScrapeOutcome::kFailed, {}, t0 + 300ms);
  EXPECT_TRUE(judge(refused, t0 + 300ms, rules).down);
  EXPECT_EQ(refused.consecutive_silent, 0u);

  // A slow answer at last: back, the run and its refusal forgotten.
  record_scrape(refused, ScrapeOutcome::kUnusable, {}, t0 + 2s);
  EXPECT_FALSE(judge(refused, t0 + 2s, rules).down);
  record_scrape(refused, ScrapeOutcome::kSilent, {}, t0 + 3s);
  record_scrape(refused, ScrapeOutcome::kSilent, {}, t0 + 4s);
  record_scrape(refused, ScrapeOutcome::kSilent, {}, t0 + 5s);
  EXPECT_FALSE(judge(refused, t0 + 5s, rules).down);
  EXPECT_TRUE(judge(refused, t0 + 12s, rules).down);  // 10 s since the last answer
}

TEST_F(EngineVerdict, FailedScrapesKeepTheLastFigures) {
  MonitorState state = scraped(4, 0.5);
  record_scrape(state, ScrapeOutcome::kFailed, {}, t0 + 100ms);
  EXPECT_EQ(state.load.waiting, 4.0);
  EXPECT_TRUE(judge(state, t0 + 100ms, rules).saturated);  // still fresh enough
}

}  // namespace
}  // namespace arbiter
