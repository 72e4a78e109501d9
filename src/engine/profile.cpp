#include "engine/profile.hpp"

#include <array>

namespace arbiter::engine {

double CostModel::step_seconds(const StepWork& work) const {
  return base_s + prefill_token_s * static_cast<double>(work.prefill_tokens) +
         decode_seq_s * static_cast<double>(work.decode_seqs) +
         context_token_s * static_cast<double>(work.context_tokens);
}

double prefill_tokens_per_s(const EngineConfig& config) {
  const double tokens = config.max_num_batched_tokens;
  return tokens / config.cost.step_seconds({.prefill_tokens = config.max_num_batched_tokens,
                                            .decode_seqs = 0,
                                            .context_tokens = 0});
}

std::uint64_t kv_cache_tokens(const EngineConfig& config) {
  return std::uint64_t{config.num_blocks} * config.block_size;
}

std::string_view config_error(const EngineConfig& config) {
  const CostModel& c = config.cost;
  if (c.base_s < 0 || c.prefill_token_s < 0 || c.decode_seq_s < 0 || c.context_token_s < 0) {
    return "cost coefficients must not be negative";
  }
  if (config.num_blocks == 0) return "num_blocks must be at least 1";
  if (config.block_size == 0) return "block_size must be at least 1";
  if (config.max_num_seqs == 0) return "max_num_seqs must be at least 1";
  if (config.max_num_batched_tokens == 0) return "max_num_batched_tokens must be at least 1";
  if (config.max_model_len < 2)
    return "max_model_len must be at least 2 (one prompt, one output token)";
  if (config.max_loras == 0) return "max_loras must be at least 1";
  if (config.lora_load_s < 0) return "lora_load_s must not be negative";
  return {};
}

namespace {

// Every number below is derived in docs/simulator.md ("Profiles"); keep the two in step.
constexpr std::array kProfiles = {
    Profile{
        .name = "llama-8b-a100",
        .summary = "Llama-3-8B BF16 on one A100-80GB SXM, vLLM defaults for that GPU",
        .config =
            {
                .cost = {.base_s = 11.2e-3,
                         .prefill_token_s = 80e-6,
                         .decode_seq_s = 40e-6,
                         .context_token_s = 80e-9},
                .num_blocks = 27'000,
                .block_size = 16,
                .max_num_seqs = 256,
                .max_num_batched_tokens = 2048,
                .max_model_len = 32'768,
            },
    },
    Profile{
        // A quantised variant of the first (staged degradation's `degraded`
        // model): estimated from the BF16 profile, not calibrated.
        .name = "llama-8b-a100-w8a8",
        .summary = "Llama-3-8B W8A8 (INT8 weights and activations) on one A100-80GB SXM: estimated",
        .config =
            {
                .cost = {.base_s = 5.6e-3,
                         .prefill_token_s = 50e-6,
                         .decode_seq_s = 40e-6,
                         .context_token_s = 80e-9},
                .num_blocks = 30'800,
                .block_size = 16,
                .max_num_seqs = 256,
                .max_num_batched_tokens = 2048,
                .max_model_len = 32'768,
            },
    },
    Profile{
        .name = "llama-70b-h100x8",
        .summary = "Llama-3-70B BF16 on 8x H100-80GB SXM (TP=8), vLLM defaults for that GPU",
        .config =
            {
                .cost = {.base_s = 11.2e-3,
                         .prefill_token_s = 65e-6,
                         .decode_seq_s = 40e-6,
                         .context_token_s = 15e-9},
                .num_blocks = 80'000,
                .block_size = 16,
                .max_num_seqs = 1024,
                .max_num_batched_tokens = 8192,
                .max_model_len = 32'768,
            },
    },
    Profile{
        .name = "tiny",
        .summary = "small fast engine for tests and demos (about 1 ms per step)",
        .config =
            {
                .cost = {.base_s = 1e-3,
                         .prefill_token_s = 10e-6,
                         .decode_seq_s = 5e-6,
                         .context_token_s = 1e-9},
                .num_blocks = 4096,
                .block_size = 16,
                .max_num_seqs = 64,
                .max_num_batched_tokens = 2048,
                .max_model_len = 8192,
            },
    },
};

}  // namespace

const Profile* find_profile(std::string_view name) {
  for (const Profile& profile : kProfiles) {
    if (profile.name == name) return &profile;
  }
  return nullptr;
}

std::vector<std::string_view> profile_names() {
  std::vector<std::string_view> names;
  for (const Profile& profile : kProfiles) names.push_back(profile.name);
  return names;
}

}  // namespace arbiter::engine
