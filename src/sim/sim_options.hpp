// What a SimServer runs: which profile, how many engines, overrides of the
// profile's engine settings, the seed and the initial faults. A plain struct
// so the gateway can fill it from its config and arbiter-sim from flags.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "engine/profile.hpp"
#include "sim/faults.hpp"

namespace arbiter::sim {

struct SimOptions {
  std::string profile = "tiny";     // engine::find_profile name
  std::string model;                // served model name; empty: the profile name
  unsigned engines = 1;             // independent engines, one HTTP listener each
  std::string address = "127.0.0.1";  // listen address of every engine
  std::uint16_t port = 0;           // engine i listens on port + i; 0: each an ephemeral port
  std::optional<std::uint32_t> max_num_seqs;            // overrides the profile
  std::optional<std::uint32_t> num_blocks;              // overrides the profile
  std::optional<std::uint32_t> block_size;              // overrides the profile
  std::optional<std::uint32_t> max_num_batched_tokens;  // overrides the profile
  std::optional<std::uint32_t> max_model_len;           // overrides the profile
  std::optional<engine::SchedulingPolicy> policy;       // default FCFS
  std::optional<double> step_time_scale;  // multiplies every cost coefficient (fast benches)
  std::uint32_t output_mean_tokens = 128;  // mean natural answer length; 0: always max_tokens
  std::uint64_t seed = 0;                  // generated text and fault draws
  Faults faults;                           // initial faults of every engine
  // As vLLM's --api-key: inference and /admin/* need `Authorization: Bearer
  // <key>` (/health and /metrics stay open); empty: no key asked.
  std::string api_key;
  // LoRA adapters served next to the model (vLLM --lora-modules): a
  // request naming one runs with it; /v1/models lists them with the model
  // as their parent. max_loras and lora_load_ms override the engine's
  // adapter slots and load time (engine::EngineConfig).
  std::vector<std::string> lora_modules;
  std::optional<std::uint32_t> max_loras;
  std::optional<double> lora_load_ms;
};

// The engine configuration the options describe, or what is wrong with them.
std::expected<engine::EngineConfig, std::string> resolve_engine_config(const SimOptions& options);

// Empty when a SimServer can run with these options; otherwise the problem.
std::string options_error(const SimOptions& options);

// The model name served: options.model, or the profile name.
std::string served_model(const SimOptions& options);

}  // namespace arbiter::sim
