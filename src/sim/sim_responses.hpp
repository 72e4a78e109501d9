// The Responses API's answer as vLLM gives it (/v1/responses): the whole
// response object, or its stream of typed events: response.created and
// in_progress, the message item and its text part added, a
// response.output_text.delta per token, then the text, part and item done
// and response.completed with the usage. Words are plain ASCII: no escaping.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/sim_text.hpp"

namespace arbiter::sim {

class ResponsesFormatter {
 public:
  ResponsesFormatter(std::string_view id, std::string_view model, std::int64_t created);

  // The events before the first token.
  void append_prelude(std::string& out);
  void append_delta(std::string& out, std::string_view word);
  // The events after the last token: `text` is the whole answer.
  void append_closing(std::string& out, std::string_view text, std::string_view finish_reason, const Usage& usage);
  // The non-streaming response object.
  std::string whole(std::string_view text, std::string_view finish_reason, const Usage& usage) const;

 private:
  // The response object; `text` and `usage` only once completed.
  std::string response(std::string_view status, std::string_view text, std::string_view finish_reason,
                       const Usage* usage) const;
  std::string message(std::string_view status, std::string_view text, bool with_content) const;
  void append_event(std::string& out, std::string_view type, std::string_view fields);

  std::string id_;       // resp_...
  std::string item_id_;  // msg_...
  std::string model_;
  std::int64_t created_;
  std::uint64_t sequence_ = 0;
};

}  // namespace arbiter::sim
