#include "core/request_parser.hpp"

#include <boost/json.hpp>

namespace arbiter {
namespace json = boost::json;

std::string_view route_path(Route route) {
  switch (route) {
    case Route::kChatCompletions: return "/v1/chat/completions";
    case Route::kCompletions: return "/v1/completions";
  }
  return "";
}

std::optional<Route> route_from_path(std::string_view path) {
  if (path == "/v1/chat/completions") return Route::kChatCompletions;
  if (path == "/v1/completions") return Route::kCompletions;
  return std::nullopt;
}

int64_t estimate_tokens(std::size_t chars) {
  return static_cast<int64_t>((chars + kCharsPerToken - 1) / kCharsPerToken);
}

namespace {

ApiError invalid(std::string message, std::string param) {
  return ApiError{ErrorCode::kInvalidRequest, std::move(message), std::move(param), {}};
}

// Characters of text in a chat message's content: a string, or an array of
// parts whose "text" fields count (images and audio are not estimated).
std::size_t content_chars(const json::value& content) {
  if (const auto* s = content.if_string()) return s->size();
  std::size_t n = 0;
  if (const auto* parts = content.if_array()) {
    for (const auto& part : *parts) {
      const auto* obj = part.if_object();
      if (!obj) continue;
      if (const auto* text = obj->if_contains("text"); text && text->is_string()) {
        n += text->get_string().size();
      }
    }
  }
  return n;
}

// Per-message overhead of chat templates (role markers), in tokens.
constexpr int64_t kTokensPerMessage = 4;

std::expected<int64_t, ApiError> chat_prompt_tokens(const json::object& body) {
  const auto* messages = body.if_contains("messages");
  if (!messages) return std::unexpected(invalid("'messages' is required", "messages"));
  const auto* arr = messages->if_array();
  if (!arr || arr->empty()) {
    return std::unexpected(invalid("'messages' must be a non-empty array", "messages"));
  }
  int64_t tokens = 0;
  for (const auto& m : *arr) {
    const auto* msg = m.if_object();
    if (!msg) return std::unexpected(invalid("each message must be an object", "messages"));
    tokens += kTokensPerMessage;
    if (const auto* content = msg->if_contains("content")) {
      tokens += estimate_tokens(content_chars(*content));
    }
  }
  return tokens;
}

std::expected<int64_t, ApiError> completion_prompt_tokens(const json::object& body) {
  const auto* prompt = body.if_contains("prompt");
  if (!prompt) return std::unexpected(invalid("'prompt' is required", "prompt"));
  if (const auto* s = prompt->if_string()) return estimate_tokens(s->size());
  if (const auto* arr = prompt->if_array()) {
    // A list of strings (batch) or a list of token ids.
    int64_t tokens = 0;
    for (const auto& p : *arr) {
      if (const auto* s = p.if_string()) {
        tokens += estimate_tokens(s->size());
      } else if (p.is_int64() || p.is_uint64()) {
        tokens += 1;
      } else if (const auto* ids = p.if_array()) {
        tokens += static_cast<int64_t>(ids->size());
      } else {
        return std::unexpected(invalid("'prompt' has an unsupported element type", "prompt"));
      }
    }
    return tokens;
  }
  return std::unexpected(invalid("'prompt' must be a string or an array", "prompt"));
}

// max_tokens / max_completion_tokens: absent or null is fine; otherwise a
// positive integer.
std::expected<std::optional<int64_t>, ApiError> read_max_tokens(const json::object& body,
                                                                const char* key) {
  const auto* v = body.if_contains(key);
  if (!v || v->is_null()) return std::optional<int64_t>{};
  if (v->is_int64() && v->get_int64() >= 1) return std::optional<int64_t>{v->get_int64()};
  if (v->is_uint64()) return std::optional<int64_t>{INT64_MAX};
  return std::unexpected(invalid(std::string("'") + key + "' must be a positive integer", key));
}

}  // namespace

std::expected<ParsedRequest, ApiError> parse_request(Route route, std::string_view body) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec) {
    return std::unexpected(
        ApiError{ErrorCode::kInvalidJson, "request body is not valid JSON: " + ec.message(), {}, {}});
  }
  if (!doc.is_object()) {
    return std::unexpected(ApiError{ErrorCode::kInvalidJson, "request body must be a JSON object", {}, {}});
  }
  ParsedRequest out;
  out.body = std::move(doc.get_object());
  out.info.route = route;
  const json::object& obj = out.body;

  const auto* model = obj.if_contains("model");
  if (!model) return std::unexpected(invalid("'model' is required", "model"));
  if (!model->is_string() || model->get_string().empty()) {
    return std::unexpected(invalid("'model' must be a non-empty string", "model"));
  }
  out.info.model = model->get_string();

  if (const auto* stream = obj.if_contains("stream"); stream && !stream->is_null()) {
    if (!stream->is_bool()) return std::unexpected(invalid("'stream' must be a boolean", "stream"));
    out.info.stream = stream->get_bool();
  }
  if (const auto* so = obj.if_contains("stream_options"); so && so->is_object()) {
    if (const auto* iu = so->get_object().if_contains("include_usage"); iu && iu->is_bool()) {
      out.info.include_usage = iu->get_bool();
    }
  }

  auto max_tokens = read_max_tokens(obj, "max_tokens");
  if (!max_tokens) return std::unexpected(max_tokens.error());
  out.info.max_tokens = *max_tokens;
  if (route == Route::kChatCompletions) {
    auto mct = read_max_tokens(obj, "max_completion_tokens");
    if (!mct) return std::unexpected(mct.error());
    if (*mct) out.info.max_tokens = *mct;  // the newer field wins, as in the OpenAI API
  }

  auto prompt = route == Route::kChatCompletions ? chat_prompt_tokens(obj) : completion_prompt_tokens(obj);
  if (!prompt) return std::unexpected(prompt.error());
  out.info.prompt_tokens_estimate = *prompt;
  return out;
}

bool apply_max_tokens_cap(ParsedRequest& request, int64_t cap) {
  if (request.info.max_tokens && *request.info.max_tokens <= cap) return false;
  const bool uses_new_field = request.info.route == Route::kChatCompletions &&
                              request.body.contains("max_completion_tokens") &&
                              !request.body.at("max_completion_tokens").is_null();
  request.body[uses_new_field ? "max_completion_tokens" : "max_tokens"] = cap;
  request.info.max_tokens = cap;
  return true;
}

}  // namespace arbiter
