#include "core/config.hpp"

#include <algorithm>

namespace arbiter {

std::vector<ClassConfig> default_classes() {
  using std::chrono::milliseconds;
  std::vector<ClassConfig> out(5);
  // Business-critical short work, only by explicit claim: a guaranteed 15%
  // and a short deadline.
  out[0].name = "critical";
  out[0].policy = {.name = "critical", .min_share = 0.15, .weight = 4, .max_queue_wait = milliseconds(2'000),
                   .engine_priority = 0, .ttft_slo = milliseconds(300)};
  // IDE completions: short, latency-critical, capped (BRIEF: max_tokens 128);
  // a keystroke burst with one x-arbiter-supersede-key collapses to its last
  // request (the OpenAI `user` field only where a config sets
  // supersede_by_user: it names an end user, not a keystroke chain). The
  // debounce is learned per key, at most 30 ms (adaptive_debounce), and
  // typing through is on: by DECISIONS.md D7 the sweep loses on fewer
  // scenarios with each (docs/benchmarks.md, "The opt-ins under the
  // yardstick").
  out[1].name = "completion";
  out[1].match = ClassMatch{.routes = {Route::kCompletions}};
  out[1].max_tokens_cap = kCompletionMaxTokensCap;
  out[1].policy = {.name = "completion", .min_share = 0.1, .weight = 2, .max_queue_wait = milliseconds(1'000),
                   .debounce = milliseconds(30), .adaptive_debounce = true, .typing_through = true,
                   .engine_priority = 1,
                   .ttft_slo = milliseconds(200)};
  out[2].name = "chat";
  out[2].match = ClassMatch{.routes = {Route::kChatCompletions, Route::kResponses}};
  out[2].policy = {.name = "chat", .max_share = 0.7, .weight = 1, .max_queue_wait = milliseconds(30'000),
                   .engine_priority = 2, .ttft_slo = milliseconds(2'000)};
  // Batch and background work, only by explicit claim: idle capacity only,
  // preempted (and resumed) when others need the room.
  out[3].name = "batch";
  out[3].policy = {.name = "batch", .weight = 0.5, .max_queue_wait = milliseconds(3'600'000), .preemptible = true,
                   .background = true, .max_queue = 100'000, .max_queue_per_tenant = 100'000,
                   .engine_priority = 10};
  // Embeddings (a RAG lookup before its chat turn, an indexing job's
  // chunks): short prompt-only work, batched well by engines; the
  // completion's tier, its own weight, a short deadline, no cap (nothing
  // is generated).
  out[4].name = "embeddings";
  out[4].match = ClassMatch{.routes = {Route::kEmbeddings}};
  out[4].policy = {.name = "embeddings", .weight = 1, .max_queue_wait = milliseconds(5'000), .engine_priority = 1};
  return out;
}

bool Config::any_adaptive_capacity() const {
  for (std::size_t p = 0; p < models.size(); ++p) {
    if (adaptive_capacity_of(p).enabled) return true;
  }
  return false;
}

std::string ModelConfig::pool_name() const {
  std::string out = name;
  for (std::size_t i = 0; i < classes.size(); ++i) out += (i == 0 ? "/" : "+") + classes[i];
  return out;
}

uint16_t Config::adapter_number(std::string_view name) const {
  for (std::size_t i = 0; i < adapters.size(); ++i) {
    if (adapters[i].name == name) return static_cast<uint16_t>(i + 1);
  }
  return 0;
}

std::size_t class_pool(const Config& config, const std::vector<std::size_t>& pools, std::size_t cls) {
  const std::string& name = config.classes[cls].name;
  std::size_t general = pools.front();
  for (const std::size_t p : pools) {
    const auto& classes = config.models[p].classes;
    if (classes.empty()) general = p;
    if (std::find(classes.begin(), classes.end(), name) != classes.end()) return p;
  }
  return general;
}

}  // namespace arbiter
