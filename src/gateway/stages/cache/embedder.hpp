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

// The text a prompt is embedded as: a chat's message contents (text parts
// of multi-part ones), one a line; a completion prompt's strings, one a
// line; token ids as their JSON. `prompt_json`: the prompt's raw value.
std::string embedding_text(std::string_view prompt_json);

}  // namespace arbiter
