#include "core/resume.hpp"

#include <algorithm>
#include <cmath>

#include <boost/json.hpp>

#include "core/sse.hpp"

namespace arbiter {
namespace json = boost::json;

namespace {

// Whether a number in `v` overflowed a double while parsing (1E99999):
// serialize would write it as Infinity, which is not JSON.
bool has_non_finite(const json::value& v) {
  switch (v.kind()) {
    case json::kind::double_:
      return !std::isfinite(v.get_double());
    case json::kind::array:
      return std::ranges::any_of(v.get_array(), has_non_finite);
    case json::kind::object:
      return std::ranges::any_of(v.get_object(), [](const auto& kv) { return has_non_finite(kv.value()); });
    default:
      return false;
  }
}

bool present(const json::object& body, std::string_view key) {
  const auto* v = body.if_contains(key);
  return v && !v->is_null() && !(v->is_bool() && !v->get_bool());
}

int64_t int_or(const json::object& o, std::string_view key, int64_t fallback) {
  const auto* v = o.if_contains(key);
  if (!v) return fallback;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  return fallback;
}

// Lowers an integer budget by what was generated already, to at least `floor`.
void reduce(json::object& body, std::string_view key, int64_t used, int64_t floor) {
  auto* v = body.if_contains(key);
  if (!v || !(v->is_int64() || v->is_uint64())) return;
  const int64_t before = v->is_int64() ? v->get_int64() : INT64_MAX;
  *v = std::max(before - used, floor);
}

json::object usage_object(const Usage& u) {
  json::object o{{"prompt_tokens", u.prompt_tokens},
                 {"completion_tokens", u.completion_tokens},
                 {"total_tokens", u.prompt_tokens + u.completion_tokens}};
  if (u.cached_tokens > 0) o["prompt_tokens_details"] = json::object{{"cached_tokens", u.cached_tokens}};
  return o;
}

// usage.prompt_tokens_details.cached_tokens, at most `prompt`; 0 when absent.
int64_t cached_or_zero(const json::object& usage, int64_t prompt) {
  const auto* details = usage.if_contains("prompt_tokens_details");
  if (!details || !details->is_object()) return 0;
  return std::clamp<int64_t>(int_or(details->get_object(), "cached_tokens", 0), 0, prompt);
}

}  // namespace

ResumeMethod resume_method(const ParsedRequest& request, bool chat_continuation_supported) {
  if (request.info.route == Route::kEmbeddings) return ResumeMethod::kNone;  // nothing generated to keep
  // A Responses answer's events are not chat chunks: neither kept nor continued.
  if (request.info.route == Route::kResponses) return ResumeMethod::kNone;
  const json::object& b = request.body();
  if (int_or(b, "n", 1) != 1 || int_or(b, "best_of", 1) != 1) return ResumeMethod::kNone;
  for (const char* key : {"tools", "functions", "logprobs", "top_logprobs", "echo", "suffix",
                          "response_format", "guided_json", "guided_regex", "guided_grammar"}) {
    if (present(b, key)) return ResumeMethod::kNone;
  }
  if (request.info.route == Route::kCompletions) {
    const auto* prompt = b.if_contains("prompt");
    return prompt && prompt->is_string() ? ResumeMethod::kPromptAppend : ResumeMethod::kNone;
  }
  if (!chat_continuation_supported) return ResumeMethod::kNone;
  const auto* messages = b.if_contains("messages");
  if (!messages || !messages->is_array() || messages->get_array().empty()) return ResumeMethod::kNone;
  if (present(b, "continue_final_message")) {
    // The client continues its own assistant message: ours appends to it,
    // which needs its content to be one string.
    const auto* last = messages->get_array().back().if_object();
    const auto* content = last ? last->if_contains("content") : nullptr;
    if (!content || !content->is_string()) return ResumeMethod::kNone;
  }
  return ResumeMethod::kContinueFinal;
}

json::object run_body(const ParsedRequest& original, ResumeMethod method, const Checkpoint& checkpoint,
                      bool aggregate) {
  json::object body = original.body();
  if (aggregate) {
    body["stream"] = true;
    body["stream_options"] = json::object{{"include_usage", true}};
  }
  if (!checkpoint.resumed() || checkpoint.text.empty()) return body;  // nothing to continue from

  switch (method) {
    case ResumeMethod::kNone:
      break;
    case ResumeMethod::kPromptAppend: {
      std::string prompt(body["prompt"].as_string());
      prompt += checkpoint.text;
      body["prompt"] = prompt;
      break;
    }
    case ResumeMethod::kContinueFinal: {
      json::array& messages = body["messages"].as_array();
      if (present(body, "continue_final_message")) {
        json::value& content = messages.back().as_object()["content"];
        std::string text(content.as_string());
        text += checkpoint.text;
        content = text;
      } else {
        messages.push_back(json::object{{"role", "assistant"}, {"content", checkpoint.text}});
      }
      body["continue_final_message"] = true;
      body["add_generation_prompt"] = false;
      break;
    }
  }
  reduce(body, "max_tokens", checkpoint.tokens, 1);
  reduce(body, "max_completion_tokens", checkpoint.tokens, 1);
  reduce(body, "min_tokens", checkpoint.tokens, 0);
  return body;
}

EventResult track_event(std::string_view event, Route route, Checkpoint& checkpoint) {
  EventResult out;
  const std::string_view payload = event_data(event);
  if (payload.empty() || payload == "[DONE]") return out;
  // An engine's chunk is a few hundred bytes: its document is built in
  // this buffer, not on the heap, once per event.
  unsigned char arena[4096];
  json::monotonic_resource memory(arena, sizeof arena);
  boost::system::error_code ec;
  json::value parsed = json::parse(payload, ec, &memory);
  if (ec || !parsed.is_object()) return out;
  json::object& chunk = parsed.get_object();

  if (checkpoint.id.empty()) {
    if (const auto* id = chunk.if_contains("id"); id && id->is_string()) checkpoint.id = id->get_string();
    checkpoint.created = int_or(chunk, "created", 0);
    if (const auto* m = chunk.if_contains("model"); m && m->is_string()) checkpoint.model = m->get_string();
  }

  bool role_only = false;
  bool has_role = false;
  if (auto* choices = chunk.if_contains("choices"); choices && choices->is_array() &&
                                                    !choices->get_array().empty()) {
    const auto* choice = choices->get_array().front().if_object();
    const json::value* text = nullptr;
    if (choice && route == Route::kChatCompletions) {
      if (const auto* delta = choice->if_contains("delta"); delta && delta->is_object()) {
        text = delta->get_object().if_contains("content");
        has_role = delta->get_object().contains("role");
      }
    } else if (choice) {
      text = choice->if_contains("text");
    }
    const bool has_text = text && text->is_string() && !text->get_string().empty();
    if (has_text) {
      checkpoint.text += text->get_string();
      ++checkpoint.tokens;
    }
    const auto* finish = choice ? choice->if_contains("finish_reason") : nullptr;
    const bool finished = finish && finish->is_string();
    if (finished) checkpoint.finish_reason = finish->get_string();
    role_only = has_role && !has_text && !finished;
  }

  // Usage of a resumed run counts the earlier runs' output as prompt: move
  // it back to completion_tokens (the total stays the engine's).
  bool usage_fixed = false;
  if (auto* usage = chunk.if_contains("usage"); usage && usage->is_object()) {
    const json::object& u = usage->get_object();
    const int64_t before = checkpoint.tokens_before_run;
    const int64_t prompt = std::max<int64_t>(int_or(u, "prompt_tokens", 0) - before, 0);
    Usage fixed{.prompt_tokens = prompt,
                .completion_tokens = int_or(u, "completion_tokens", 0) + before,
                .cached_tokens = cached_or_zero(u, prompt)};
    checkpoint.usage = fixed;
    if (before > 0) {
      *usage = usage_object(fixed);
      usage_fixed = true;
    }
  }

  if (!checkpoint.resumed()) {
    if (has_role) checkpoint.role_sent = true;
    return out;
  }
  if (role_only && checkpoint.role_sent) {
    out.fate = EventFate::kDrop;
    return out;
  }
  if (has_role) checkpoint.role_sent = true;
  const auto* id = chunk.if_contains("id");
  if (!usage_fixed && (!id || !id->is_string() || id->get_string() == checkpoint.id)) return out;
  // A chunk that cannot be written back as JSON goes as it came.
  if (has_non_finite(parsed)) return out;
  chunk["id"] = checkpoint.id;
  out.fate = EventFate::kRewritten;
  out.rewritten = "data: " + json::serialize(chunk) + "\n\n";
  return out;
}

std::string aggregate_response(Route route, const Checkpoint& checkpoint) {
  const bool chat = route == Route::kChatCompletions;
  json::object choice{{"index", 0}};
  if (chat) {
    choice["message"] = json::object{{"role", "assistant"}, {"content", checkpoint.text}};
  } else {
    choice["text"] = checkpoint.text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = checkpoint.finish_reason.empty() ? json::value(nullptr)
                                                             : json::value(checkpoint.finish_reason);
  json::object response{{"id", checkpoint.id},
                        {"object", chat ? "chat.completion" : "text_completion"},
                        {"created", checkpoint.created},
                        {"model", checkpoint.model},
                        {"choices", json::array{std::move(choice)}}};
  if (checkpoint.usage) response["usage"] = usage_object(*checkpoint.usage);
  return json::serialize(response);
}

}  // namespace arbiter
