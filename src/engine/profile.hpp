// Engine configuration and the step cost model, plus the named profiles the
// simulator ships (coefficients and their sources: docs/simulator.md).
// Times are seconds as double throughout src/engine.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace arbiter::engine {

// What one engine step computes; the cost model turns it into a duration.
struct StepWork {
  std::uint64_t prefill_tokens = 0;  // prompt (or recomputed) tokens run this step
  std::uint64_t decode_seqs = 0;     // sequences that decode one token this step
  std::uint64_t context_tokens = 0;  // KV tokens attended: sum of KV length of scheduled seqs
};

// t = base + prefill_token * prefill_tokens + decode_seq * decode_seqs
//       + context_token * context_tokens
struct CostModel {
  double base_s = 0;           // fixed cost of a step: weight reads, launches, sampling
  double prefill_token_s = 0;  // marginal cost of one prefill token (compute-bound GEMMs)
  double decode_seq_s = 0;     // marginal cost of one decoding sequence
  double context_token_s = 0;  // cost of reading one token of KV cache in attention

  double step_seconds(const StepWork& work) const;
};

// vLLM's --scheduling-policy.
enum class SchedulingPolicy {
  kFcfs,      // arrival order; a preempted request goes back to the front
  kPriority,  // lowest `priority` first, ties by arrival; victim is the lowest priority
};

struct EngineConfig {
  CostModel cost;
  std::uint32_t num_blocks = 0;              // KV cache blocks (vLLM num_gpu_blocks)
  std::uint32_t block_size = 16;             // tokens per KV block
  std::uint32_t max_num_seqs = 256;          // running sequences per step
  std::uint32_t max_num_batched_tokens = 0;  // token budget per step (prefill + decode)
  std::uint32_t max_model_len = 0;           // prompt + output limit per request
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  bool enable_prefix_caching = true;  // vLLM V1 default
  // LoRA adapters (vLLM --enable-lora): a step runs requests of at most
  // max_loras adapters (vLLM --max-loras, default 1), each in one of that
  // many GPU slots; a request whose adapter is in none waits until a slot
  // holds no running request, then the adapter is loaded into it (least
  // recently used first), which adds lora_load_s to that step. An estimate,
  // not a measurement: an adapter's weights copied from host memory or
  // read from a local disk (docs/simulator.md).
  std::uint32_t max_loras = 1;
  double lora_load_s = 0.02;
};

// Empty when an Engine can run with `config`; otherwise what is wrong, for
// reporting bad flags or config files. Engine's constructor requires empty.
std::string_view config_error(const EngineConfig& config);

struct Profile {
  std::string_view name;     // key used by --profile and config files
  std::string_view summary;  // one line: model, hardware, what it is for
  EngineConfig config;
};

// Prompt tokens per second the engine prefills when prefill fills its steps
// (max_num_batched_tokens per step): what a gateway in front of it should
// assume to bound the prefill queue it builds (SchedulerConfig::max_prefill_backlog).
double prefill_tokens_per_s(const EngineConfig& config);

// Tokens the engine's KV cache holds (num_blocks x block_size): the most a
// request can use, and the prefix cache a gateway's affinity index sizes to.
std::uint64_t kv_cache_tokens(const EngineConfig& config);

// nullptr when no profile has that name.
const Profile* find_profile(std::string_view name);
std::vector<std::string_view> profile_names();

}  // namespace arbiter::engine
