// The simulated model's output text and its OpenAI wire formats: SSE chunk
// events (chat.completion.chunk / text_completion, as vLLM sends them) and
// whole non-streaming responses.
// The text itself: engine/generated_text.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/request.hpp"

namespace arbiter::sim {

struct Usage {
  std::uint32_t prompt_tokens = 0;
  std::uint32_t completion_tokens = 0;
};

// Formats the events of one response. Every piece not specific to a token
// (id, object, created, model) is rendered once, at construction, so each
// token costs a few appends and no allocation once `out` has grown.
class ChunkFormatter {
 public:
  ChunkFormatter(Route route, std::string_view id, std::string_view model, std::int64_t created,
                 bool include_usage);

  // Chat only: an answer's first event, {"delta":{"role":"assistant","content":""}}.
  void append_role_event(std::string& out, std::uint32_t index = 0) const;
  // One token's event of answer `index`; finish_reason is empty for all but
  // the answer's last.
  void append_token_event(std::string& out, std::uint32_t index, std::string_view text,
                          std::string_view finish_reason) const;
  // The final usage event (choices empty), sent when include_usage.
  void append_usage_event(std::string& out, const Usage& usage) const;
  static constexpr std::string_view kDoneEvent = "data: [DONE]\n\n";

  // The non-streaming response, its answers in index order.
  struct Answer {
    std::string text;
    std::string_view finish_reason;
  };
  std::string whole_response(const std::vector<Answer>& answers, const Usage& usage) const;

 private:
  Route route_;
  std::string head_;   // data: {"id":...,"object":...,"created":...,"model":...,"choices":
  std::string tail_;   // ,"usage":null}\n\n or }\n\n
  std::string id_;     // JSON-escaped id, quoted
  std::string model_;  // JSON-escaped model, quoted
  std::int64_t created_;
};

// "chatcmpl-<16 hex>" or "cmpl-<16 hex>": the engine's `n`th answer, under
// the simulator's seed (simulators with different seeds, such as the
// gateway's embedded ones, do not repeat each other's ids).
std::string response_id(Route route, std::uint64_t seed, std::uint64_t n);

}  // namespace arbiter::sim
