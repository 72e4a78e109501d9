#include "sim/sim_responses.hpp"

#include <fmt/format.h>

namespace arbiter::sim {

ResponsesFormatter::ResponsesFormatter(std::string_view id, std::string_view model, std::int64_t created)
    : id_("resp_" + std::string(id)), item_id_("msg_" + std::string(id)), model_(model), created_(created) {}

std::string ResponsesFormatter::message(std::string_view status, std::string_view text, bool with_content) const {
  std::string content = with_content ? fmt::format(R"({{"type":"output_text","text":"{}","annotations":[]}})", text) : "";
  return fmt::format(R"({{"id":"{}","type":"message","status":"{}","role":"assistant","content":[{}]}})", item_id_,
                     status, content);
}

std::string ResponsesFormatter::response(std::string_view status, std::string_view text, std::string_view finish_reason,
                                         const Usage* usage) const {
  const bool cut = finish_reason == "length";
  const std::string output = usage ? "[" + message("completed", text, true) + "]" : "[]";
  const std::string usage_json =
      usage ? fmt::format(R"({{"input_tokens":{},"input_tokens_details":{{"cached_tokens":0}},"output_tokens":{},)"
                          R"("output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":{}}})",
                          usage->prompt_tokens, usage->completion_tokens, usage->prompt_tokens + usage->completion_tokens)
            : "null";
  return fmt::format(
      R"({{"id":"{}","object":"response","created_at":{},"status":"{}","model":"{}","output":{},"usage":{},)"
      R"("incomplete_details":{},"error":null}})",
      id_, created_, usage && cut ? "incomplete" : status, model_, output, usage_json,
      usage && cut ? R"({"reason":"max_output_tokens"})" : "null");
}

void ResponsesFormatter::append_event(std::string& out, std::string_view type, std::string_view fields) {
  fmt::format_to(std::back_inserter(out), "event: {}\ndata: {{\"type\":\"{}\",\"sequence_number\":{},{}}}\n\n", type,
                 type, sequence_++, fields);
}

void ResponsesFormatter::append_prelude(std::string& out) {
  const std::string started = response("in_progress", {}, {}, nullptr);
  append_event(out, "response.created", "\"response\":" + started);
  append_event(out, "response.in_progress", "\"response\":" + started);
  append_event(out, "response.output_item.added",
               "\"output_index\":0,\"item\":" + message("in_progress", {}, false));
  append_event(out, "response.content_part.added",
               fmt::format(R"("item_id":"{}","output_index":0,"content_index":0,)"
                           R"("part":{{"type":"output_text","text":"","annotations":[]}})",
                           item_id_));
}

void ResponsesFormatter::append_delta(std::string& out, std::string_view word) {
  append_event(out, "response.output_text.delta",
               fmt::format(R"("item_id":"{}","output_index":0,"content_index":0,"delta":"{}","logprobs":[])", item_id_,
                           word));
}

void ResponsesFormatter::append_closing(std::string& out, std::string_view text, std::string_view finish_reason,
                                        const Usage& usage) {
  append_event(out, "response.output_text.done",
               fmt::format(R"("item_id":"{}","output_index":0,"content_index":0,"text":"{}","logprobs":[])", item_id_,
                           text));
  append_event(out, "response.content_part.done",
               fmt::format(R"("item_id":"{}","output_index":0,"content_index":0,)"
                           R"("part":{{"type":"output_text","text":"{}","annotations":[]}})",
                           item_id_, text));
  append_event(out, "response.output_item.done", "\"output_index\":0,\"item\":" + message("completed", text, true));
  append_event(out, "response.completed", "\"response\":" + response("completed", text, finish_reason, &usage));
}

std::string ResponsesFormatter::whole(std::string_view text, std::string_view finish_reason, const Usage& usage) const {
  return response("completed", text, finish_reason, &usage);
}

}  // namespace arbiter::sim
