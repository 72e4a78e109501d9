#include "core/config.hpp"

namespace arbiter {

std::vector<ClassConfig> default_classes() {
  std::vector<ClassConfig> out;
  // Business-critical short work: only by explicit claim.
  out.push_back({.name = "critical", .match = std::nullopt, .max_tokens_cap = std::nullopt});
  // IDE completions: short, latency-critical, capped (BRIEF: max_tokens 128).
  out.push_back({.name = "completion",
                 .match = ClassMatch{.routes = {Route::kCompletions}},
                 .max_tokens_cap = kCompletionMaxTokensCap});
  out.push_back({.name = "chat",
                 .match = ClassMatch{.routes = {Route::kChatCompletions}},
                 .max_tokens_cap = std::nullopt});
  // Batch and background work: only by explicit claim.
  out.push_back({.name = "batch", .match = std::nullopt, .max_tokens_cap = std::nullopt});
  return out;
}

}  // namespace arbiter
