#include "sim/sim_flags.hpp"

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

namespace arbiter::sim {

const std::string_view kSimUsage =
    "usage: arbiter-sim [--port P] [--engines N] [--profile NAME] [options]\n"
    "Serves N simulated vLLM engines on 127.0.0.1 ports P..P+N-1 (OpenAI API, /metrics, /health).\n"
    "  --port P                   first port (default 8000); 0: an ephemeral port per engine\n"
    "  --host ADDR                listen address (default 127.0.0.1)\n"
    "  --port-file PATH           write the bound ports there, one per line, once listening\n"
    "  --engines N                independent engines, one port each (default 1)\n"
    "  --profile NAME             engine profile (default tiny; --list-profiles)\n"
    "  --model NAME               served model name (default: the profile name)\n"
    "  --max-num-seqs N           overrides of the profile's engine settings\n"
    "  --num-blocks N\n"
    "  --block-size N\n"
    "  --max-num-batched-tokens N\n"
    "  --max-model-len N\n"
    "  --scheduling-policy P      fcfs (default) or priority\n"
    "  --lora-modules A[,B...]    LoRA adapters served next to the model (vLLM's name=path: the path is ignored)\n"
    "  --max-loras N              adapters a step runs at once (default 1)\n"
    "  --lora-load-ms MS          time loading an adapter into a slot adds to its step (default 20)\n"
    "  --step-time-scale X        multiply every step cost by X (0: as fast as the CPU allows)\n"
    "  --output-mean-tokens N     mean natural answer length (default 128; 0: always max_tokens)\n"
    "  --seed S                   generated text and fault draws (default 0)\n"
    "  --api-key KEY              inference and /admin/faults need Authorization: Bearer KEY\n"
    "  --threads N                I/O threads (default 1)\n"
    "  --drain-s S                on SIGTERM, let requests in progress run S seconds (default 5)\n"
    "Faults (also at run time: POST /admin/faults with a JSON object of the same names, _ for -):\n"
    "  --error-rate R             answer this share of requests with --error-status\n"
    "  --error-status S           429, 500 or 503 (default 503)\n"
    "  --added-latency-ms MS      wait before handling each request\n"
    "  --hang-rate R              read this share of requests and never answer\n"
    "  --crash-after-tokens K     drop the connection after K tokens (0: off)\n"
    "  --crash-rate R             share of requests the crash hits (default 1)\n"
    "  --slow-start-s S           /health and requests answer 503 for S seconds after start\n"
    "  --kv-blocks N              only N KV blocks usable (0: all)\n";

namespace {

template <class T>
std::expected<T, std::string> parse_int(std::string_view flag, std::string_view text, T min, T max) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < static_cast<long long>(min) ||
      v > static_cast<long long>(max)) {
    return std::unexpected(std::string(flag) + " wants an integer in [" + std::to_string(min) + ", " +
                           std::to_string(max) + "], got '" + std::string(text) + "'");
  }
  return static_cast<T>(v);
}

std::expected<std::uint64_t, std::string> parse_u64(std::string_view flag, std::string_view text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    return std::unexpected(std::string(flag) + " wants a non-negative integer, got '" + std::string(text) + "'");
  }
  return v;
}

std::expected<double, std::string> parse_double(std::string_view flag, std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v) || v < 0) {
    return std::unexpected(std::string(flag) + " wants a non-negative number, got '" + std::string(text) + "'");
  }
  return v;
}

using Setter = std::function<std::expected<void, std::string>(SimFlags&, std::string_view flag,
                                                               std::string_view value)>;

// Sets `field` (reached through `get`) from an integer flag.
template <class T, class Get>
Setter set_int(Get get, T min = 0, T max = std::numeric_limits<T>::max()) {
  return [get, min, max](SimFlags& f, std::string_view flag, std::string_view v) -> std::expected<void, std::string> {
    auto n = parse_int<T>(flag, v, min, max);
    if (!n) return std::unexpected(n.error());
    get(f) = *n;
    return {};
  };
}

template <class Get>
Setter set_double(Get get) {
  return [get](SimFlags& f, std::string_view flag, std::string_view v) -> std::expected<void, std::string> {
    auto n = parse_double(flag, v);
    if (!n) return std::unexpected(n.error());
    get(f) = *n;
    return {};
  };
}

template <class Get>
Setter set_string(Get get) {
  return [get](SimFlags& f, std::string_view flag, std::string_view v) -> std::expected<void, std::string> {
    if (v.empty()) return std::unexpected(std::string(flag) + " wants a non-empty value");
    get(f) = std::string(v);
    return {};
  };
}

// Flags that take a value.
const std::map<std::string_view, Setter>& setters() {
  using U32 = std::uint32_t;
  constexpr U32 kMax = std::numeric_limits<U32>::max();
  static const std::map<std::string_view, Setter> kSetters = {
      {"--port", set_int<std::uint16_t>([](SimFlags& f) -> auto& { return f.options.port; })},
      {"--host", set_string([](SimFlags& f) -> auto& { return f.options.address; })},
      {"--port-file", set_string([](SimFlags& f) -> auto& { return f.port_file; })},
      {"--engines", set_int<unsigned>([](SimFlags& f) -> auto& { return f.options.engines; }, 1, 1024)},
      {"--profile", set_string([](SimFlags& f) -> auto& { return f.options.profile; })},
      {"--model", set_string([](SimFlags& f) -> auto& { return f.options.model; })},
      {"--api-key", set_string([](SimFlags& f) -> auto& { return f.options.api_key; })},
      {"--served-model-name", set_string([](SimFlags& f) -> auto& { return f.options.model; })},
      {"--max-num-seqs", set_int<U32>([](SimFlags& f) -> auto& { return f.options.max_num_seqs.emplace(); }, 1, kMax)},
      {"--num-blocks", set_int<U32>([](SimFlags& f) -> auto& { return f.options.num_blocks.emplace(); }, 1, kMax)},
      {"--block-size", set_int<U32>([](SimFlags& f) -> auto& { return f.options.block_size.emplace(); }, 1, 4096)},
      {"--max-num-batched-tokens",
       set_int<U32>([](SimFlags& f) -> auto& { return f.options.max_num_batched_tokens.emplace(); }, 1, kMax)},
      {"--max-model-len", set_int<U32>([](SimFlags& f) -> auto& { return f.options.max_model_len.emplace(); }, 2, kMax)},
      {"--step-time-scale", set_double([](SimFlags& f) -> auto& { return f.options.step_time_scale.emplace(); })},
      {"--output-mean-tokens", set_int<U32>([](SimFlags& f) -> auto& { return f.options.output_mean_tokens; })},
      {"--seed",
       [](SimFlags& f, std::string_view flag, std::string_view v) -> std::expected<void, std::string> {
         auto n = parse_u64(flag, v);
         if (!n) return std::unexpected(n.error());
         f.options.seed = *n;
         return {};
       }},
      {"--drain-s", set_double([](SimFlags& f) -> auto& { return f.drain_s; })},
      {"--max-loras", set_int<U32>([](SimFlags& f) -> auto& { return f.options.max_loras.emplace(); }, 1, 1024)},
      {"--lora-load-ms", set_double([](SimFlags& f) -> auto& { return f.options.lora_load_ms.emplace(); })},
      {"--lora-modules",
       [](SimFlags& f, std::string_view flag, std::string_view v) -> std::expected<void, std::string> {
         for (std::size_t at = 0; at <= v.size();) {
           const std::size_t comma = std::min(v.find(',', at), v.size());
           const std::string_view item = v.substr(at, comma - at);
           const std::string_view name = item.substr(0, item.find('='));
           if (name.empty()) return std::unexpected(std::string(flag) + " wants NAME[=PATH][,NAME...], got '" + std::string(v) + "'");
           f.options.lora_modules.emplace_back(name);
           at = comma + 1;
         }
         return {};
       }},
      {"--threads", set_int<unsigned>([](SimFlags& f) -> auto& { return f.threads; }, 1, 256)},
      {"--scheduling-policy",
       [](SimFlags& f, std::string_view flag, std::string_view v) -> std::expected<void, std::string> {
         if (v == "fcfs") f.options.policy = engine::SchedulingPolicy::kFcfs;
         else if (v == "priority") f.options.policy = engine::SchedulingPolicy::kPriority;
         else return std::unexpected(std::string(flag) + " wants fcfs or priority, got '" + std::string(v) + "'");
         return {};
       }},
      {"--error-rate", set_double([](SimFlags& f) -> auto& { return f.options.faults.error_rate; })},
      {"--error-status", set_int<int>([](SimFlags& f) -> auto& { return f.options.faults.error_status; }, 100, 599)},
      {"--added-latency-ms", set_int<U32>([](SimFlags& f) -> auto& { return f.options.faults.added_latency_ms; })},
      {"--hang-rate", set_double([](SimFlags& f) -> auto& { return f.options.faults.hang_rate; })},
      {"--crash-after-tokens", set_int<U32>([](SimFlags& f) -> auto& { return f.options.faults.crash_after_tokens; })},
      {"--crash-rate", set_double([](SimFlags& f) -> auto& { return f.options.faults.crash_rate; })},
      {"--slow-start-s", set_double([](SimFlags& f) -> auto& { return f.options.faults.slow_start_s; })},
      {"--kv-blocks", set_int<U32>([](SimFlags& f) -> auto& { return f.options.faults.kv_blocks; })},
  };
  return kSetters;
}

}  // namespace

std::expected<SimFlags, std::string> parse_sim_flags(std::span<const std::string_view> args) {
  SimFlags flags;
  flags.options.port = 8000;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view flag = args[i];
    if (flag == "--help" || flag == "-h") {
      flags.help = true;
      continue;
    }
    if (flag == "--list-profiles") {
      flags.list_profiles = true;
      continue;
    }
    std::string_view value;
    bool has_value = false;
    if (const auto eq = flag.find('='); flag.starts_with("--") && eq != std::string_view::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    const auto it = setters().find(flag);
    if (it == setters().end()) return std::unexpected("unknown flag '" + std::string(flag) + "'");
    if (!has_value) {
      if (i + 1 >= args.size()) return std::unexpected(std::string(flag) + " needs a value");
      value = args[++i];
    }
    if (auto ok = it->second(flags, flag, value); !ok) return std::unexpected(ok.error());
  }
  if (flags.help || flags.list_profiles) return flags;
  if (std::string err = options_error(flags.options); !err.empty()) return std::unexpected(std::move(err));
  return flags;
}

}  // namespace arbiter::sim
