// The one-pass body scan (core/request_fields behind parse_request) against
// the document-based reading it replaced, kept here as the reference: for
// randomly damaged request bodies both must accept the same bodies with the
// same RequestInfo, and reject the rest with the same error.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "core/request_fields.hpp"
#include "core/request_parser.hpp"

namespace arbiter {
namespace {
namespace json = boost::json;

// --- The reference: what parse_request did with a boost::json document. ---

ApiError invalid(std::string message, std::string param) {
  return ApiError{ErrorCode::kInvalidRequest, std::move(message), std::move(param), {}};
}

std::size_t content_chars(const json::value& content) {
  if (const auto* s = content.if_string()) return s->size();
  std::size_t n = 0;
  if (const auto* parts = content.if_array()) {
    for (const auto& part : *parts) {
      const auto* obj = part.if_object();
      if (!obj) continue;
      if (const auto* text = obj->if_contains("text"); text && text->is_string()) n += text->get_string().size();
    }
  }
  return n;
}

std::expected<int64_t, ApiError> chat_prompt_tokens(const json::object& body) {
  const auto* messages = body.if_contains("messages");
  if (!messages) return std::unexpected(invalid("'messages' is required", "messages"));
  const auto* arr = messages->if_array();
  if (!arr || arr->empty()) return std::unexpected(invalid("'messages' must be a non-empty array", "messages"));
  int64_t tokens = 0;
  for (const auto& m : *arr) {
    const auto* msg = m.if_object();
    if (!msg) return std::unexpected(invalid("each message must be an object", "messages"));
    tokens += 4;
    if (const auto* content = msg->if_contains("content")) tokens += estimate_tokens(content_chars(*content));
  }
  return tokens;
}

std::expected<int64_t, ApiError> completion_prompt_tokens(const json::object& body) {
  const auto* prompt = body.if_contains("prompt");
  if (!prompt) return std::unexpected(invalid("'prompt' is required", "prompt"));
  if (const auto* s = prompt->if_string()) return estimate_tokens(s->size());
  if (const auto* arr = prompt->if_array()) {
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

std::expected<std::optional<int64_t>, ApiError> read_max_tokens(const json::object& body, const char* key) {
  const auto* v = body.if_contains(key);
  if (!v || v->is_null()) return std::optional<int64_t>{};
  if (v->is_int64() && v->get_int64() >= 1) return std::optional<int64_t>{v->get_int64()};
  if (v->is_uint64()) return std::optional<int64_t>{INT64_MAX};
  return std::unexpected(invalid(std::string("'") + key + "' must be a positive integer", key));
}

// The body as a document. A lone escaped surrogate, which Boost.JSON
// refuses and engines (Python's json) take, reads as U+FFFD, as
// parse_request has read it since it took such bodies.
json::value reference_document(std::string_view body, boost::system::error_code& ec) {
  json::value doc = json::parse(body, ec);
  if (std::string clean(body); ec && replace_lone_surrogates(clean)) doc = json::parse(clean, ec);
  return doc;
}

std::expected<RequestInfo, ApiError> reference_parse(Route route, std::string_view body) {
  boost::system::error_code ec;
  json::value doc = reference_document(body, ec);
  if (ec) return std::unexpected(ApiError{ErrorCode::kInvalidJson, "request body is not valid JSON: " + ec.message(), {}, {}});
  if (!doc.is_object()) return std::unexpected(ApiError{ErrorCode::kInvalidJson, "request body must be a JSON object", {}, {}});
  const json::object& obj = doc.get_object();
  RequestInfo info;
  info.route = route;
  const auto* model = obj.if_contains("model");
  if (!model) return std::unexpected(invalid("'model' is required", "model"));
  if (!model->is_string() || model->get_string().empty()) return std::unexpected(invalid("'model' must be a non-empty string", "model"));
  info.model = model->get_string();
  if (const auto* user = obj.if_contains("user"); user && user->is_string()) info.user = std::string(user->get_string());
  if (const auto* stream = obj.if_contains("stream"); stream && !stream->is_null()) {
    if (!stream->is_bool()) return std::unexpected(invalid("'stream' must be a boolean", "stream"));
    info.stream = stream->get_bool();
  }
  if (const auto* so = obj.if_contains("stream_options"); so && so->is_object()) {
    if (const auto* iu = so->get_object().if_contains("include_usage"); iu && iu->is_bool()) info.include_usage = iu->get_bool();
  }
  auto max_tokens = read_max_tokens(obj, "max_tokens");
  if (!max_tokens) return std::unexpected(max_tokens.error());
  info.max_tokens = *max_tokens;
  if (route == Route::kChatCompletions) {
    auto mct = read_max_tokens(obj, "max_completion_tokens");
    if (!mct) return std::unexpected(mct.error());
    if (*mct) info.max_tokens = *mct;
  }
  int64_t n = 1;
  if (const auto* v = obj.if_contains("n"); v && !v->is_null()) {
    if (v->is_int64() && v->get_int64() >= 1) {
      n = v->get_int64();
    } else if (v->is_uint64()) {
      n = INT64_MAX;
    } else {
      return std::unexpected(invalid("'n' must be a positive integer", "n"));
    }
  }
  auto prompt = route == Route::kChatCompletions ? chat_prompt_tokens(obj) : completion_prompt_tokens(obj);
  if (!prompt) return std::unexpected(prompt.error());
  info.prompt_tokens_estimate = *prompt;
  // A batch: each string or token-id list is a prompt; integers directly in
  // the list are one tokenized prompt.
  int64_t prompts = 1;
  if (const auto* arr = route == Route::kCompletions ? obj.at("prompt").if_array() : nullptr) {
    int64_t lists = 0;
    bool ids = false;
    for (const auto& p : *arr) {
      if (p.is_string() || p.is_array()) ++lists;
      if (p.is_int64() || p.is_uint64()) ids = true;
    }
    prompts = std::max<int64_t>(1, lists + (ids ? 1 : 0));
  }
  info.choices = n > INT64_MAX / prompts ? INT64_MAX : n * prompts;
  return info;
}

// --- The comparison. ---

void expect_same(Route route, const std::string& body) {
  const auto expected = reference_parse(route, body);
  const auto actual = parse_request(route, body);
  ASSERT_EQ(actual.has_value(), expected.has_value())
      << (actual ? std::string("accepted") : actual.error().message) << " vs "
      << (expected ? std::string("accepted") : expected.error().message);
  if (expected) {
    EXPECT_EQ(actual->info.model, expected->model);
    EXPECT_EQ(actual->info.stream, expected->stream);
    EXPECT_EQ(actual->info.include_usage, expected->include_usage);
    EXPECT_EQ(actual->info.max_tokens, expected->max_tokens);
    EXPECT_EQ(actual->info.prompt_tokens_estimate, expected->prompt_tokens_estimate);
    EXPECT_EQ(actual->info.choices, expected->choices);
    EXPECT_EQ(actual->info.user, expected->user);
    boost::system::error_code ec;
    EXPECT_EQ(actual->body(), reference_document(body, ec).as_object());
  } else {
    EXPECT_EQ(actual.error().code, expected.error().code);
    EXPECT_EQ(actual.error().message, expected.error().message);
    EXPECT_EQ(actual.error().param, expected.error().param);
  }
}

// The cap as the document wrote it: the field the client used, set to `cap`.
json::value reference_cap(Route route, const std::string& body, int64_t cap) {
  boost::system::error_code ec;
  json::object doc = reference_document(body, ec).as_object();
  const bool uses_new_field = route == Route::kChatCompletions && doc.contains("max_completion_tokens") &&
                              !doc.at("max_completion_tokens").is_null();
  doc[uses_new_field ? "max_completion_tokens" : "max_tokens"] = cap;
  return doc;
}

// After a cap, what goes upstream (the text, or the serialised document) is
// the document's rewrite, whichever way the cap was written.
void expect_same_cap(Route route, const std::string& body, int64_t cap) {
  auto parsed = parse_request(route, body);
  ASSERT_TRUE(parsed);
  const auto before = parsed->info.max_tokens;
  if (!apply_max_tokens_cap(*parsed, cap)) {
    EXPECT_TRUE(before && *before <= cap);
    EXPECT_EQ(parsed->text, body);
    return;
  }
  boost::system::error_code ec;
  const json::value sent =
      parsed->document_changed() ? json::value(parsed->body()) : reference_document(parsed->text, ec);
  EXPECT_EQ(sent, reference_cap(route, body, cap)) << parsed->text;
  EXPECT_EQ(parsed->info.max_tokens, cap);
  EXPECT_EQ(parsed->body(), sent.as_object());  // a document built afterwards agrees
}

TEST(RequestFields, CapsAreWrittenAsTheDocumentWroteThem) {
  for (const auto& [route, body] : std::vector<std::pair<Route, std::string>>{
           {Route::kCompletions, R"({"model":"c","prompt":"x"})"},
           {Route::kCompletions, R"(  {"model":"c","prompt":"x","max_tokens":4096} )"},
           {Route::kCompletions, R"({"model":"c","prompt":"x","max_tokens":18446744073709551615})"},
           {Route::kCompletions, R"({"model":"c","prompt":"x","max_tokens":null})"},
           {Route::kCompletions, R"({"model":"c","prompt":"x","max_tokens":5,"max_tokens":500})"},
           {Route::kCompletions, R"({"model":"c","prompt":"x","max_tokens":50})"},
           {Route::kChatCompletions, R"({"model":"m","messages":[{"content":"x"}],"max_completion_tokens":300})"},
           {Route::kChatCompletions, R"({"model":"m","messages":[{"content":"x"}],"max_completion_tokens":null})"},
           {Route::kChatCompletions, R"({"model":"m","messages":[{"content":"x"}],"max_tokens":9,"max_completion_tokens":200})"},
       }) {
    SCOPED_TRACE(body);
    expect_same_cap(route, body, 128);
  }
  // Written in place: no document is needed to send it.
  auto p = parse_request(Route::kCompletions, R"({"model":"c","prompt":"x","max_tokens":4096})");
  ASSERT_TRUE(apply_max_tokens_cap(*p, 128));
  EXPECT_FALSE(p->document_changed());
  EXPECT_EQ(p->text, R"({"model":"c","prompt":"x","max_tokens":128})");
  // A second, lower cap still lands once.
  ASSERT_TRUE(apply_max_tokens_cap(*p, 64));
  EXPECT_EQ(p->body().at("max_tokens").as_int64(), 64);
  EXPECT_EQ(p->body().size(), 3u);
}

TEST(RequestFields, DamagedBodiesReadAsTheDocumentReadThem) {
  const std::vector<std::pair<Route, std::string>> seeds = {
      {Route::kChatCompletions,
       R"({"model":"m1","stream":true,"stream_options":{"include_usage":true},"max_tokens":50,)"
       R"("messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"abcd"},)"
       R"({"type":"image_url","image_url":{"url":"u"}}]}],"user":"u1"})"},
      {Route::kChatCompletions,
       R"({"messages":[{"role":"user","content":"x\u00e9y"}],"model":"m\"2","max_completion_tokens":7,"n":1})"},
      {Route::kCompletions, R"({"model":"c","prompt":["abcdefgh",[1,2,3],7],"max_tokens":null,"stream":false})"},
      {Route::kCompletions, R"({"model":"c","prompt":"hello world","stop":["\n"],"temperature":0.5,"user":"dev-7"})"},
      // A batch: a prompt per string or token-id list, each with n answers.
      {Route::kCompletions, R"({"model":"c","prompt":["ab",[4,5],"cd",[6]],"n":3,"max_tokens":9})"},
      // A lone surrogate (taken, as U+FFFD) and a pair; damage makes more of both.
      {Route::kCompletions, R"({"model":"c","prompt":"a\ud83d\ude00b\ude00c\ud83dx","max_tokens":3})"},
  };
  const std::string alphabet = R"({}[]:,"\ 0123456789-.eEtrufalsn)" "\x01\xc3\xa9\xff" "abmodelpromptmessagescontenttext";
  std::mt19937 rng(42);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto& [route, seed] = seeds[rng() % seeds.size()];
    std::string body = seed;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % body.size();
      switch (rng() % 4) {
        case 0: body[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), alphabet[rng() % alphabet.size()]); break;
        case 2: body.erase(at, 1); break;
        default: {  // repeat a stretch: duplicate keys, nested copies
          const std::size_t from = rng() % body.size();
          const std::size_t len = std::min<std::size_t>(rng() % 40, body.size() - from);
          body.insert(at, body.substr(from, len));
        }
      }
    }
    SCOPED_TRACE(testing::Message() << "case " << i << ": " << body);
    expect_same(route, body);
    if (reference_parse(route, body)) {
      ++accepted;
      expect_same_cap(route, body, 16);
    }
    if (HasFailure()) break;
  }
  EXPECT_GT(accepted, 1000);  // the damage left many bodies valid: the accepted path was compared
}

}  // namespace
}  // namespace arbiter
