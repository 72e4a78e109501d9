// The semantic mode's embeddings (docs/cache.md, "Semantic mode"): a
// prompt's text sent to a backend of `cache.semantic_model` (round robin
// over its backends; each call on a connection of its own, as shadow runs
// are), within `cache.semantic_timeout`. Its vector, or none: a failed,
// late or malformed answer is a miss, never the request's error.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/runtime.hpp"
#include "http/asio.hpp"

namespace arbiter {

class Embedder {
 public:
  enum class Result : uint8_t { kOk, kFailed, kTimeout, kNoBackend };
  struct Embedding {
    Result result = Result::kOk;
    std::vector<float> vector;  // kOk: not empty
  };
  Task<Embedding> embed(const Runtime& runtime, std::string text);

 private:
  std::atomic<uint64_t> next_{0};
};

std::string_view embedder_result_name(Embedder::Result result);

// What of a prompt is compared by meaning, and what must be the same: a
// chat's last message (its text parts) is embedded, and the messages before
// it (system prompt, retrieved context, the conversation so far) are hashed
// into `context`, which a semantic hit must match exactly; a completion's
// prompt strings are embedded whole (context 0). A prompt that is not one
// of these is embedded as its JSON. `prompt_json`: the prompt's raw value.
struct EmbeddedPrompt {
  std::string text;
  uint64_t context = 0;
};
EmbeddedPrompt embedded_prompt(std::string_view prompt_json);

}  // namespace arbiter
