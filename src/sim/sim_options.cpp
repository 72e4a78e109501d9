#include "sim/sim_options.hpp"

#include <cmath>

namespace arbiter::sim {

std::expected<engine::EngineConfig, std::string> resolve_engine_config(const SimOptions& o) {
  const engine::Profile* profile = engine::find_profile(o.profile);
  if (!profile) {
    std::string names;
    for (const auto name : engine::profile_names()) names += (names.empty() ? "" : ", ") + std::string(name);
    return std::unexpected("unknown profile '" + o.profile + "' (known: " + names + ")");
  }
  engine::EngineConfig c = profile->config;
  if (o.max_num_seqs) c.max_num_seqs = *o.max_num_seqs;
  if (o.num_blocks) c.num_blocks = *o.num_blocks;
  if (o.block_size) c.block_size = *o.block_size;
  if (o.max_num_batched_tokens) c.max_num_batched_tokens = *o.max_num_batched_tokens;
  if (o.max_model_len) c.max_model_len = *o.max_model_len;
  if (o.policy) c.policy = *o.policy;
  if (o.max_loras) c.max_loras = *o.max_loras;
  if (o.lora_load_ms) c.lora_load_s = *o.lora_load_ms / 1000;
  if (o.step_time_scale) {
    const double s = *o.step_time_scale;
    if (!std::isfinite(s) || s < 0) return std::unexpected(std::string("step_time_scale must be >= 0"));
    c.cost.base_s *= s;
    c.cost.prefill_token_s *= s;
    c.cost.decode_seq_s *= s;
    c.cost.context_token_s *= s;
  }
  if (const auto err = engine::config_error(c); !err.empty()) return std::unexpected(std::string(err));
  return c;
}

std::string options_error(const SimOptions& o) {
  if (o.engines == 0) return "engines must be at least 1";
  if (o.engines > 1024) return "engines must be at most 1024";
  if (o.port != 0 && std::uint32_t{o.port} + o.engines - 1 > 65535) {
    return "port + engines - 1 must be at most 65535";
  }
  if (auto c = resolve_engine_config(o); !c) return c.error();
  return faults_error(o.faults);
}

std::string served_model(const SimOptions& o) { return o.model.empty() ? o.profile : o.model; }

}  // namespace arbiter::sim
