#include "core/request_parser.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include <boost/json.hpp>

#include "core/request_fields.hpp"

namespace arbiter {
namespace json = boost::json;

std::string_view route_path(Route route) {
  switch (route) {
    case Route::kChatCompletions: return "/v1/chat/completions";
    case Route::kCompletions: return "/v1/completions";
    case Route::kEmbeddings: return "/v1/embeddings";
    case Route::kResponses: return "/v1/responses";
  }
  return "";
}

std::optional<Route> route_from_path(std::string_view path) {
  if (path == "/v1/chat/completions") return Route::kChatCompletions;
  if (path == "/v1/completions") return Route::kCompletions;
  if (path == "/v1/embeddings") return Route::kEmbeddings;
  if (path == "/v1/responses") return Route::kResponses;
  return std::nullopt;
}

int64_t estimate_tokens(std::size_t chars) {
  return static_cast<int64_t>((chars + kCharsPerToken - 1) / kCharsPerToken);
}

namespace {

ApiError invalid(std::string message, std::string param) {
  return ApiError{ErrorCode::kInvalidRequest, std::move(message), std::move(param), {}};
}

// max_tokens / max_completion_tokens: absent or null is fine; otherwise a
// positive integer.
std::expected<std::optional<int64_t>, ApiError> read_max_tokens(const JsonScalar& v, const char* key) {
  if (v.kind == JsonKind::kAbsent || v.kind == JsonKind::kNull) return std::optional<int64_t>{};
  if (v.kind == JsonKind::kInt64 && v.int64 >= 1) return std::optional<int64_t>{v.int64};
  if (v.kind == JsonKind::kUint64) return std::optional<int64_t>{INT64_MAX};
  return std::unexpected(invalid(std::string("'") + key + "' must be a positive integer", key));
}

// n: absent or null is 1; otherwise a positive integer.
std::expected<int64_t, ApiError> read_n(const JsonScalar& v) {
  if (v.kind == JsonKind::kAbsent || v.kind == JsonKind::kNull) return 1;
  if (v.kind == JsonKind::kInt64 && v.int64 >= 1) return v.int64;
  if (v.kind == JsonKind::kUint64) return INT64_MAX;
  return std::unexpected(invalid("'n' must be a positive integer", "n"));
}

std::expected<int64_t, ApiError> chat_prompt_tokens(const RequestFields& f) {
  if (f.messages == JsonKind::kAbsent) return std::unexpected(invalid("'messages' is required", "messages"));
  if (f.messages != JsonKind::kArray || f.message_count == 0) {
    return std::unexpected(invalid("'messages' must be a non-empty array", "messages"));
  }
  if (f.message_not_object) return std::unexpected(invalid("each message must be an object", "messages"));
  return f.message_tokens;
}

// A completion's `prompt`, or an embedding's `input` (`name`): the same forms.
std::expected<int64_t, ApiError> completion_prompt_tokens(const RequestFields& f, const std::string& name = "prompt") {
  if (f.prompt == JsonKind::kAbsent) return std::unexpected(invalid("'" + name + "' is required", name));
  if (f.prompt == JsonKind::kString) return f.prompt_tokens;
  if (f.prompt == JsonKind::kArray) {
    // A list of strings (batch) or a list of token ids.
    if (f.prompt_bad_element) {
      return std::unexpected(invalid("'" + name + "' has an unsupported element type", name));
    }
    return f.prompt_tokens;
  }
  return std::unexpected(invalid("'" + name + "' must be a string or an array", name));
}

}  // namespace

boost::json::object& ParsedRequest::body() {
  return const_cast<json::object&>(std::as_const(*this).body());
}

void ParsedRequest::drop_document() {
  if (!document_changed_) body_.reset();
}

void ParsedRequest::release_body() {
  std::string().swap(text);
  body_.reset();
  top_keys_.complete = false;
}

const boost::json::object& ParsedRequest::body() const {
  if (!body_) {
    // parse_request checked that `text` is a JSON object, within its depth
    // and with lone surrogates read as U+FFFD.
    json::parse_options options;
    options.max_depth = max_json_depth_;
    boost::system::error_code ec;
    json::value doc = json::parse(text, ec, {}, options);
    if (ec) {
      std::string clean = text;
      replace_lone_surrogates(clean);
      doc = json::parse(clean, {}, options);
    }
    body_.emplace(std::move(doc.as_object()));
  }
  return *body_;
}

namespace {

bool given(const JsonScalar& v) { return v.kind != JsonKind::kAbsent && v.kind != JsonKind::kNull; }

// Only read, never refused here: the engine judges these fields.
void read_repeatability(const RequestFields& f, RequestInfo& info) {
  const JsonScalar& t = f.temperature;
  info.greedy = (t.kind == JsonKind::kInt64 && t.int64 == 0) || (t.kind == JsonKind::kDouble && t.real == 0);
  info.seeded = f.seed.kind == JsonKind::kInt64 || f.seed.kind == JsonKind::kUint64;
  info.tools = f.tools != JsonKind::kAbsent && f.tools != JsonKind::kNull;
  const JsonScalar& lp = f.logprobs;
  info.logprobs = given(lp) && !(lp.kind == JsonKind::kBool && !lp.boolean);
}

}  // namespace

namespace {

// Characters of every string under `v` (a Responses `input`: a string, or
// items whose content parts hold text), for the prompt estimate.
std::size_t text_chars(const json::value& v) {
  if (v.is_string()) return v.get_string().size();
  std::size_t n = 0;
  if (v.is_array()) {
    for (const json::value& x : v.get_array()) n += text_chars(x);
  } else if (v.is_object()) {
    for (const auto& kv : v.get_object()) n += kv.key() == "type" || kv.key() == "role" ? 0 : text_chars(kv.value());
  }
  return n;
}

}  // namespace

// A Responses API request, read from its document: rarer than chat, and its
// `input` items are a different shape from anything the scan knows.
std::expected<ParsedRequest, ApiError> parse_responses(std::string body, std::size_t max_json_depth) {
  json::parse_options options;
  options.max_depth = max_json_depth;
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec, {}, options);
  if (ec) return std::unexpected(ApiError{ErrorCode::kInvalidJson, "request body is not valid JSON: " + ec.message(), {}, {}});
  if (!doc.is_object()) return std::unexpected(ApiError{ErrorCode::kInvalidJson, "request body must be a JSON object", {}, {}});
  json::object& o = doc.get_object();
  ParsedRequest out;
  out.info.route = Route::kResponses;
  out.max_json_depth_ = max_json_depth;
  const json::value* model = o.if_contains("model");
  if (model == nullptr) return std::unexpected(invalid("'model' is required", "model"));
  if (!model->is_string() || model->get_string().empty()) {
    return std::unexpected(invalid("'model' must be a non-empty string", "model"));
  }
  out.info.model = std::string(model->get_string());
  if (const json::value* user = o.if_contains("user"); user && user->is_string()) out.info.user = std::string(user->get_string());
  if (const json::value* stream = o.if_contains("stream"); stream && !stream->is_null()) {
    if (!stream->is_bool()) return std::unexpected(invalid("'stream' must be a boolean", "stream"));
    out.info.stream = stream->get_bool();
  }
  if (const json::value* max = o.if_contains("max_output_tokens"); max && !max->is_null()) {
    if (max->is_uint64() || (max->is_int64() && max->get_int64() >= 1)) {
      out.info.max_tokens = max->is_uint64() ? INT64_MAX : max->get_int64();
    } else {
      return std::unexpected(invalid("'max_output_tokens' must be a positive integer", "max_output_tokens"));
    }
  }
  const json::value* input = o.if_contains("input");
  if (input == nullptr) return std::unexpected(invalid("'input' is required", "input"));
  if (!input->is_string() && !(input->is_array() && !input->get_array().empty())) {
    return std::unexpected(invalid("'input' must be a string or a non-empty array of items", "input"));
  }
  std::size_t chars = text_chars(*input);
  if (const json::value* instructions = o.if_contains("instructions"); instructions && !instructions->is_null()) {
    if (!instructions->is_string()) return std::unexpected(invalid("'instructions' must be a string", "instructions"));
    chars += instructions->get_string().size();
  }
  out.info.prompt_tokens_estimate = estimate_tokens(chars);
  if (const json::value* t = o.if_contains("temperature"); t && t->is_number()) {
    out.info.greedy = t->to_number<double>(ec) == 0 && !ec;
  }
  const json::value* tools = o.if_contains("tools");
  out.info.tools = tools != nullptr && !tools->is_null();
  out.body_ = std::move(o);
  out.top_keys_.complete = false;  // not scanned: the result cache does not key it
  out.text = std::move(body);
  return out;
}

std::expected<ParsedRequest, ApiError> parse_request(Route route, std::string body, std::size_t max_json_depth) {
  if (route == Route::kResponses) return parse_responses(std::move(body), max_json_depth);
  RequestFields f;
  // An embedding's `input` is read as a completion's prompt.
  const bool embeddings = route == Route::kEmbeddings;
  if (const auto ec = scan_request_fields(body, f, max_json_depth, embeddings)) {
    return std::unexpected(
        ApiError{ErrorCode::kInvalidJson, "request body is not valid JSON: " + ec.message(), {}, {}});
  }
  if (f.root != JsonKind::kObject) {
    return std::unexpected(ApiError{ErrorCode::kInvalidJson, "request body must be a JSON object", {}, {}});
  }
  // A body the gateway rewrites is serialised from its document, where such a
  // number would go out as `Infinity` or `NaN` (found by fuzzing: fuzz/,
  // docs/security.md).
  if (f.number_out_of_range) {
    return std::unexpected(
        ApiError{ErrorCode::kInvalidJson, "request body has a number out of range for a double", {}, {}});
  }
  ParsedRequest out;
  out.info.route = route;
  out.max_json_depth_ = max_json_depth;

  if (f.model == JsonKind::kAbsent) return std::unexpected(invalid("'model' is required", "model"));
  if (f.model != JsonKind::kString || f.model_name.empty()) {
    return std::unexpected(invalid("'model' must be a non-empty string", "model"));
  }
  out.info.model = std::move(f.model_name);
  out.info.user = std::move(f.user);

  if (!embeddings && f.stream.kind != JsonKind::kAbsent && f.stream.kind != JsonKind::kNull) {
    if (f.stream.kind != JsonKind::kBool) return std::unexpected(invalid("'stream' must be a boolean", "stream"));
    out.info.stream = f.stream.boolean;
  }
  out.info.include_usage = f.include_usage;

  auto max_tokens = read_max_tokens(f.max_tokens, "max_tokens");
  if (!max_tokens) return std::unexpected(max_tokens.error());
  out.info.max_tokens = *max_tokens;
  if (route == Route::kChatCompletions) {
    auto mct = read_max_tokens(f.max_completion_tokens, "max_completion_tokens");
    if (!mct) return std::unexpected(mct.error());
    if (*mct) out.info.max_tokens = *mct;  // the newer field wins, as in the OpenAI API
  }

  auto n = read_n(f.n);
  if (!n) return std::unexpected(n.error());

  auto prompt = route == Route::kChatCompletions ? chat_prompt_tokens(f)
                : embeddings                      ? completion_prompt_tokens(f, "input")
                                                  : completion_prompt_tokens(f);
  if (!prompt) return std::unexpected(prompt.error());
  out.info.prompt_tokens_estimate = *prompt;
  // Each prompt of a batch gets its n answers.
  const int64_t prompts =
      route == Route::kCompletions ? std::max<int64_t>(1, f.prompt_count) : 1;
  out.info.choices = embeddings ? 1 : saturating_product(*n, prompts);
  const std::size_t at = route == Route::kChatCompletions ? f.messages_at : f.prompt_at;
  out.info.prompt_at = at == TextSpan::kNone ? std::string::npos : at;
  out.max_tokens_ = f.max_tokens;
  out.max_completion_tokens_ = f.max_completion_tokens;
  read_repeatability(f, out.info);
  out.top_keys_ = f.top_keys;
  out.text = std::move(body);
  return out;
}

bool apply_max_tokens_cap(ParsedRequest& request, int64_t cap) {
  if (request.info.route == Route::kEmbeddings) return false;  // it generates no tokens
  if (request.info.max_tokens && *request.info.max_tokens <= cap) return false;
  if (request.info.route == Route::kResponses) {
    request.body()["max_output_tokens"] = cap;
    request.document_changed_ = true;
    request.info.max_tokens = cap;
    return true;
  }
  auto given = [](const JsonScalar& v) { return v.kind != JsonKind::kAbsent && v.kind != JsonKind::kNull; };
  // The field the client used: parse_request checked a given one is a
  // positive integer.
  const bool uses_new_field =
      request.info.route == Route::kChatCompletions && given(request.max_completion_tokens_);
  JsonScalar& site = uses_new_field ? request.max_completion_tokens_ : request.max_tokens_;
  const std::string digits = std::to_string(cap);
  // vLLM refuses a min_tokens above max_tokens (400): a body that may carry
  // one takes the document's way, where it is lowered to the cap as well.
  const bool may_set_min = request.text.find("\"min_tokens\"") != std::string::npos;
  if (!request.document_changed_ && !may_set_min && given(site) && site.span.offset != TextSpan::kNone) {
    request.text.replace(site.span.offset, site.span.size, digits);
  } else if (!request.document_changed_ && !may_set_min && site.kind == JsonKind::kAbsent) {
    // First in the object: the root is an object, so its brace is the first one.
    request.text.insert(request.text.find('{') + 1, "\"max_tokens\":" + digits + ",");
  } else {
    boost::json::object& body = request.body();
    body[uses_new_field ? "max_completion_tokens" : "max_tokens"] = cap;
    if (boost::json::value* min = body.if_contains("min_tokens"); min && min->is_number()) {
      boost::system::error_code ec;
      const double value = min->to_number<double>(ec);
      if (!ec && value > static_cast<double>(cap)) *min = cap;
    }
    request.document_changed_ = true;
  }
  if (!request.document_changed_) {
    request.body_.reset();  // a document built before reads the old text
    // Offsets in the text moved: a later rewrite takes the document's way.
    site.kind = JsonKind::kInt64;
    request.max_tokens_.span = request.max_completion_tokens_.span = {};
  }
  request.info.max_tokens = cap;
  request.top_keys_.complete = false;
  return true;
}

void rewrite_model(ParsedRequest& request, std::string_view model) {
  request.body()["model"] = model;
  request.document_changed_ = true;
  request.top_keys_.complete = false;
  request.info.model = std::string(model);
}

}  // namespace arbiter
