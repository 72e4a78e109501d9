#include "sim/sim_text.hpp"

#include "sim/mix.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

namespace arbiter::sim {

namespace {

std::string quoted(std::string_view s) { return boost::json::serialize(boost::json::string(s)); }

void append_usage_object(std::string& out, const Usage& u) {
  fmt::format_to(std::back_inserter(out), R"({{"prompt_tokens":{},"total_tokens":{},"completion_tokens":{}}})",
                 u.prompt_tokens, u.prompt_tokens + u.completion_tokens, u.completion_tokens);
}

// [{"index":N (the choice's opening, without its closing brace)
void append_index(std::string& out, std::uint32_t index) {
  if (index == 0) {
    out += R"([{"index":0)";  // the common case, without formatting
    return;
  }
  fmt::format_to(std::back_inserter(out), R"([{{"index":{})", index);
}

void append_finish(std::string& out, std::string_view finish_reason) {
  if (finish_reason.empty()) {
    out += "null";
  } else {
    out += '"';
    out += finish_reason;
    out += '"';
  }
}

}  // namespace

std::string response_id(Route route, std::uint64_t seed, std::uint64_t n) {
  if (route == Route::kResponses) return fmt::format("{:016x}", mix(mix(seed) + n));  // resp_ and msg_ prefix it
  return fmt::format("{}-{:016x}", route == Route::kChatCompletions ? "chatcmpl" : "cmpl", mix(mix(seed) + n));
}

ChunkFormatter::ChunkFormatter(Route route, std::string_view id, std::string_view model,
                               std::int64_t created, bool include_usage)
    : route_(route), id_(quoted(id)), model_(quoted(model)), created_(created) {
  const std::string_view object =
      route == Route::kChatCompletions ? "chat.completion.chunk" : "text_completion";
  head_ = fmt::format(R"(data: {{"id":{},"object":"{}","created":{},"model":{},"choices":)", id_, object,
                      created, model_);
  tail_ = include_usage ? ",\"usage\":null}\n\n" : "}\n\n";
}

void ChunkFormatter::append_role_event(std::string& out, std::uint32_t index) const {
  out += head_;
  append_index(out, index);
  out += R"(,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}])";
  out += tail_;
}

void ChunkFormatter::append_token_event(std::string& out, std::uint32_t index, std::string_view text,
                                        std::string_view finish_reason) const {
  // Words are plain ASCII letters and spaces: no JSON escaping needed.
  out += head_;
  append_index(out, index);
  if (route_ == Route::kChatCompletions) {
    out += R"(,"delta":{"content":")";
    out += text;
    out += R"("},"logprobs":null,"finish_reason":)";
    append_finish(out, finish_reason);
    out += "}]";
  } else {
    out += R"(,"text":")";
    out += text;
    out += R"(","logprobs":null,"finish_reason":)";
    append_finish(out, finish_reason);
    out += R"(,"stop_reason":null}])";
  }
  out += tail_;
}

void ChunkFormatter::append_usage_event(std::string& out, const Usage& usage) const {
  out += head_;
  out += R"([],"usage":)";
  append_usage_object(out, usage);
  out += "}\n\n";
}

std::string ChunkFormatter::whole_response(const std::vector<Answer>& answers, const Usage& usage) const {
  std::string out;
  std::size_t text_bytes = 0;
  for (const Answer& a : answers) text_bytes += a.text.size();
  out.reserve(text_bytes + 320 + 120 * answers.size());
  const bool chat = route_ == Route::kChatCompletions;
  fmt::format_to(std::back_inserter(out), R"({{"id":{},"object":"{}","created":{},"model":{},"choices":[)", id_,
                 chat ? "chat.completion" : "text_completion", created_, model_);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), R"({{"index":{},)", i);
    out += chat ? R"("message":{"role":"assistant","content":")" : R"("text":")";
    out += answers[i].text;
    out += chat ? R"("},"logprobs":null,"finish_reason":)" : R"(","logprobs":null,"finish_reason":)";
    append_finish(out, answers[i].finish_reason);
    out += R"(,"stop_reason":null})";
  }
  out += R"(],"usage":)";
  append_usage_object(out, usage);
  out += '}';
  return out;
}

}  // namespace arbiter::sim
