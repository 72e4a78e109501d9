#include "sim/sim_metrics.hpp"

#include <fmt/format.h>

namespace arbiter::sim {

namespace {

// vLLM's bucket bounds (vllm/v1/metrics/loggers.py).
const std::vector<double>& ttft_buckets() {
  static const std::vector<double> kBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06,  0.08,  0.1,
                                               0.25,  0.5,   0.75, 1.0,  2.5,  5.0,   7.5,   10.0,
                                               20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
  return kBuckets;
}
const std::vector<double>& request_latency_buckets() {
  static const std::vector<double> kBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                               5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  return kBuckets;
}

// Brings a counter up to a total sampled from the engine (never down).
void catch_up(metrics::Counter* c, std::uint64_t total) {
  if (total > c->value()) c->inc(total - c->value());
}

}  // namespace

SimMetrics::SimMetrics(std::string model, const engine::EngineConfig& config)
    : model_(std::move(model)),
      labels_(fmt::format("model_name=\"{}\",engine=\"0\"", metrics::escape_label_value(model_))) {
  const std::vector<std::string> labels = {"model_name", "engine"};
  const std::vector<std::string> kind_labels = {"model_name", "engine", "kind"};
  const std::string_view m = model_;
  auto gauge = [&](const char* name, const char* help) {
    return &registry_.gauge(name, help, labels).with({m, "0"});
  };
  auto counter = [&](const char* name, const char* help) {
    return &registry_.counter(name, help, labels).with({m, "0"});
  };
  auto histogram = [&](const char* name, const char* help, const std::vector<double>& bounds) {
    return &registry_.histogram(name, help, labels, bounds).with({m, "0"});
  };

  running_ = gauge("vllm:num_requests_running", "Number of requests in model execution batches.");
  waiting_ = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.");
  kv_usage_ = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.");
  const std::string block_size = std::to_string(config.block_size);
  const std::string num_blocks = std::to_string(config.num_blocks);
  registry_
      .gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
             {"model_name", "engine", "block_size", "num_gpu_blocks", "enable_prefix_caching"})
      .with({m, "0", block_size, num_blocks, config.enable_prefix_caching ? "True" : "False"})
      .set(1);
  prefix_queries_ = counter("vllm:prefix_cache_queries_total",
                            "Prefix cache queries, in terms of number of queried tokens.");
  prefix_hits_ =
      counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.");
  preemptions_ = counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.");
  prompt_tokens_ = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.");
  generation_tokens_ = counter("vllm:generation_tokens_total", "Number of generation tokens processed.");
  auto& success = registry_.counter("vllm:request_success_total", "Count of successfully processed requests.",
                                    {"model_name", "engine", "finished_reason"});
  success_stop_ = &success.with({m, "0", "stop"});
  success_length_ = &success.with({m, "0", "length"});
  ttft_ = histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                    ttft_buckets());
  e2e_ = histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                   request_latency_buckets());
  queue_ = histogram("vllm:request_queue_time_seconds",
                     "Histogram of time spent in WAITING phase for request.", request_latency_buckets());

  kv_blocks_usable_ = gauge("arbiter_sim_kv_blocks_usable",
                            "KV blocks usable now (fewer than num_gpu_blocks under the kv_blocks fault).");
  in_flight_work_ = gauge("arbiter_sim_in_flight_work_tokens",
                          "Prefill and decode tokens computed for the requests in the engine now: "
                          "lost if the process dies.");
  requests_received_ = counter("arbiter_sim_requests_received_total",
                               "Inference requests received, before faults and validation.");
  aborted_ = counter("arbiter_sim_requests_aborted_total",
                     "Requests aborted in the engine (client gone or crash fault).");
  auto& wasted = registry_.counter("arbiter_sim_wasted_tokens_total",
                                   "Tokens computed for requests that were later aborted.", kind_labels);
  wasted_prefill_ = &wasted.with({m, "0", "prefill"});
  wasted_decode_ = &wasted.with({m, "0", "decode"});
  reused_ = counter("arbiter_sim_wasted_tokens_reused_total",
                    "Of the wasted prefill: prompt tokens a later request found in the prefix cache "
                    "(computed for someone after all). Net waste = wasted - reused.");
  prefill_computed_ = counter("arbiter_sim_prefill_tokens_computed_total",
                              "Prefill tokens computed, recomputation included, cache hits excluded.");
  steps_ = counter("arbiter_sim_steps_total", "Engine steps that ran something.");
  auto& faults = registry_.counter("arbiter_sim_faults_injected_total",
                                   "Requests hit by an injected fault, by kind.", kind_labels);
  faults_[static_cast<int>(InjectedFault::kError)] = &faults.with({m, "0", "error"});
  faults_[static_cast<int>(InjectedFault::kHang)] = &faults.with({m, "0", "hang"});
  faults_[static_cast<int>(InjectedFault::kCrash)] = &faults.with({m, "0", "crash"});
  faults_[static_cast<int>(InjectedFault::kSlowStart)] = &faults.with({m, "0", "slow_start"});
}

void SimMetrics::observe_finished(const engine::RequestTiming& t, bool finish_length) {
  ttft_->observe(t.first_token - t.arrival);
  e2e_->observe(t.finished - t.arrival);
  queue_->observe(t.first_scheduled - t.arrival);
  (finish_length ? success_length_ : success_stop_)->inc();
}

void SimMetrics::count_fault(InjectedFault kind) { faults_[static_cast<int>(kind)]->inc(); }

void SimMetrics::count_request() { requests_received_->inc(); }

void SimMetrics::sample(const engine::EngineStats& s, std::uint64_t in_flight_work_tokens) {
  running_->set(s.num_requests_running);
  waiting_->set(s.num_requests_waiting);
  kv_usage_->set(s.kv_cache_usage_perc);
  kv_blocks_usable_->set(s.num_blocks);
  in_flight_work_->set(static_cast<double>(in_flight_work_tokens));
  catch_up(prefix_queries_, s.prefix_cache_queries_total);
  catch_up(prefix_hits_, s.prefix_cache_hits_total);
  catch_up(preemptions_, s.num_preemptions_total);
  catch_up(prompt_tokens_, s.prompt_tokens_total);
  catch_up(generation_tokens_, s.generation_tokens_total);
  catch_up(aborted_, s.requests_aborted_total);
  catch_up(wasted_prefill_, s.wasted_prefill_tokens_total);
  catch_up(wasted_decode_, s.wasted_decode_tokens_total);
  catch_up(reused_, s.reused_after_cancel_tokens_total + s.reused_after_preempt_tokens_total);
  catch_up(prefill_computed_, s.prefill_tokens_computed_total);
  catch_up(steps_, s.steps_total);
}

std::string SimMetrics::render(const engine::EngineStats& stats, std::uint64_t in_flight_work_tokens) {
  std::lock_guard lock(render_mu_);
  sample(stats, in_flight_work_tokens);
  std::string out = registry_.render();
  // Fractional, and the registry's counters are integers: rendered here.
  fmt::format_to(std::back_inserter(out),
                 "# HELP arbiter_sim_busy_seconds_total Seconds the engine spent in steps (utilisation = "
                 "its rate).\n"
                 "# TYPE arbiter_sim_busy_seconds_total counter\n"
                 "arbiter_sim_busy_seconds_total{{{}}} {}\n",
                 labels_, stats.busy_seconds_total);
  return out;
}

}  // namespace arbiter::sim
