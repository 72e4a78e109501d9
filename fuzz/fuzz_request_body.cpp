// A client's request body: the one-pass scan (core/request_fields), the checks
// behind it (core/request_parser), the class cap written into the text
// (apply_max_tokens_cap, what the caps stage does), the resume method and the
// body of a resumed run (core/resume), and the model rewrite of the breaker.
// Properties:
// - the scan reads what Boost.JSON's document parser reads: the same syntax
//   errors, and the same values for every field recorded (the last of
//   duplicate keys wins), prompt estimates included;
// - a capped body is valid JSON that parses back with the cap as its budget
//   and nothing else changed; capping again (lower) still holds;
// - the run body of a resumed request and a rewritten model serialise to
//   bodies that parse back, with the same fields.
// Input: one byte of choices (route, caps), then the body.
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/request_fields.hpp"
#include "core/request_parser.hpp"
#include "core/resume.hpp"
#include "fuzz_check.hpp"

namespace arbiter {
namespace {
namespace json = boost::json;

JsonKind kind_of(const json::value* v) {
  if (!v) return JsonKind::kAbsent;
  switch (v->kind()) {
    case json::kind::null: return JsonKind::kNull;
    case json::kind::bool_: return JsonKind::kBool;
    case json::kind::int64: return JsonKind::kInt64;
    case json::kind::uint64: return JsonKind::kUint64;
    case json::kind::double_: return JsonKind::kDouble;
    case json::kind::string: return JsonKind::kString;
    case json::kind::array: return JsonKind::kArray;
    case json::kind::object: return JsonKind::kObject;
  }
  return JsonKind::kAbsent;
}

void check_scalar(const JsonScalar& s, const json::value* v, std::string_view text) {
  FUZZ_CHECK(s.kind == kind_of(v));
  if (!v) return;
  if (v->is_bool()) FUZZ_CHECK(s.boolean == v->get_bool());
  if (v->is_int64()) FUZZ_CHECK(s.int64 == v->get_int64());
  // (A double that is not finite: the body is refused, and NaN equals nothing.)
  if (v->is_number() && !(v->is_double() && !std::isfinite(v->get_double())) && s.span.offset != TextSpan::kNone) {
    // The recorded span holds the number's text.
    FUZZ_CHECK(s.span.offset + s.span.size <= text.size());
    const json::value again = json::parse(text.substr(s.span.offset, s.span.size));
    if (v->is_double()) {
      // Boost.JSON 1.81 reads a long number to within an ulp or so, and not
      // always the same way alone as inside a document (see run_body): the
      // same number, not the same bits.
      FUZZ_CHECK(again.is_double());
      const double a = again.get_double(), b = v->get_double();
      FUZZ_CHECK(a == b || std::fabs(a - b) <= 1e-14 * std::max(std::fabs(a), std::fabs(b)));
    } else {
      FUZZ_CHECK(again == *v);
    }
  }
}

// The scan's figures, computed from the document.
void check_against_document(const RequestFields& f, const json::value& doc, std::string_view text) {
  FUZZ_CHECK(f.root == kind_of(&doc));
  if (!doc.is_object()) return;
  const json::object& o = doc.get_object();
  const json::value* model = o.if_contains("model");
  FUZZ_CHECK(f.model == kind_of(model));
  if (model && model->is_string()) FUZZ_CHECK(f.model_name == model->get_string());
  const json::value* user = o.if_contains("user");
  FUZZ_CHECK(f.user.has_value() == (user && user->is_string()));
  if (f.user) FUZZ_CHECK(*f.user == user->get_string());
  check_scalar(f.stream, o.if_contains("stream"), text);
  check_scalar(f.max_tokens, o.if_contains("max_tokens"), text);
  check_scalar(f.max_completion_tokens, o.if_contains("max_completion_tokens"), text);
  check_scalar(f.n, o.if_contains("n"), text);
  bool include_usage = false;
  if (const json::value* so = o.if_contains("stream_options"); so && so->is_object()) {
    const json::value* iu = so->get_object().if_contains("include_usage");
    include_usage = iu && iu->is_bool() && iu->get_bool();
  }
  FUZZ_CHECK(f.include_usage == include_usage);

  const json::value* messages = o.if_contains("messages");
  FUZZ_CHECK(f.messages == kind_of(messages));
  if (messages && messages->is_array()) {
    const json::array& a = messages->get_array();
    FUZZ_CHECK(f.message_count == a.size());
    bool not_object = false;
    int64_t tokens = 0;
    for (const json::value& m : a) {
      if (!m.is_object()) {
        not_object = true;
        continue;
      }
      std::size_t chars = 0;
      if (const json::value* c = m.get_object().if_contains("content")) {
        if (c->is_string()) chars = c->get_string().size();
        if (c->is_array()) {
          for (const json::value& part : c->get_array()) {
            const json::value* t = part.is_object() ? part.get_object().if_contains("text") : nullptr;
            if (t && t->is_string()) chars += t->get_string().size();
          }
        }
      }
      tokens += 4 + estimate_tokens(chars);
    }
    FUZZ_CHECK(f.message_not_object == not_object);
    FUZZ_CHECK(f.message_tokens == tokens);
  }
  const json::value* prompt = o.if_contains("prompt");
  FUZZ_CHECK(f.prompt == kind_of(prompt));
  if (prompt && prompt->is_string()) {
    FUZZ_CHECK(f.prompt_tokens == estimate_tokens(prompt->get_string().size()));
    FUZZ_CHECK(f.prompt_count == 1);
  }
  if (prompt && prompt->is_array()) {
    bool bad = false, ids = false;
    int64_t tokens = 0, count = 0;
    for (const json::value& e : prompt->get_array()) {
      if (e.is_string()) {
        tokens += estimate_tokens(e.get_string().size());
        ++count;
      } else if (e.is_int64() || e.is_uint64()) {
        tokens += 1;
        ids = true;
      } else if (e.is_array()) {
        tokens += static_cast<int64_t>(e.get_array().size());
        ++count;
      } else {
        bad = true;
      }
    }
    FUZZ_CHECK(f.prompt_bad_element == bad);
    FUZZ_CHECK(f.prompt_tokens == tokens);
    FUZZ_CHECK(f.prompt_count == count + (ids ? 1 : 0));
  }
  for (const auto& [at, key] : {std::pair{f.messages_at, "messages"}, std::pair{f.prompt_at, "prompt"}}) {
    if (at != TextSpan::kNone) FUZZ_CHECK(text.substr(at).starts_with(key));
  }
}

// `text` read as a document by the gateway's rules: nesting to
// limits.max_json_depth's default, a lone escaped surrogate as U+FFFD (an
// escape of the same length, so the scan's offsets hold in `text` too).
json::value parse_as_gateway(std::string_view text, boost::system::error_code& ec) {
  std::string clean(text);
  replace_lone_surrogates(clean);
  json::parse_options options;
  options.max_depth = kDefaultMaxJsonDepth;
  return json::parse(clean, ec, {}, options);
}

json::value parse_as_gateway(std::string_view text) {
  boost::system::error_code ec;
  json::value doc = parse_as_gateway(text, ec);
  FUZZ_CHECK(!ec);
  return doc;
}

// The body as it would go out.
std::string wire_body(const ParsedRequest& r) {
  return r.document_changed() ? json::serialize(r.body()) : r.text;
}

// `r`, capped at `cap`: the body parses back with the cap as its budget and
// every other field as before.
void check_cap(ParsedRequest& r, Route route, int64_t cap) {
  const std::optional<int64_t> before = r.info.max_tokens;
  const json::object original = r.body();
  const bool changed = apply_max_tokens_cap(r, cap);
  FUZZ_CHECK(changed == !(before && *before <= cap));
  FUZZ_CHECK(r.info.max_tokens == (changed ? std::optional<int64_t>(cap) : before));
  const std::string out = wire_body(r);
  auto again = parse_request(route, out);
  FUZZ_CHECK(again);
  FUZZ_CHECK(again->info.max_tokens == r.info.max_tokens);
  FUZZ_CHECK(again->info.model == r.info.model);
  FUZZ_CHECK(again->info.stream == r.info.stream);
  FUZZ_CHECK(again->info.prompt_tokens_estimate == r.info.prompt_tokens_estimate);
  // Only the budget fields differ from the original document.
  json::object a = parse_as_gateway(out).as_object();
  json::object b = original;
  for (const char* key : {"max_tokens", "max_completion_tokens", "max_output_tokens"}) {
    a.erase(key);
    b.erase(key);
  }
  if (!r.document_changed()) {
    FUZZ_CHECK(a == b);  // the client's text with one number edited: read the same way
  } else {
    // Serialised from the document: the same fields (numbers may read back
    // an ulp off, see run_body below).
    FUZZ_CHECK(a.size() == b.size());
    for (const auto& [key, value] : b) FUZZ_CHECK(a.contains(key));
  }
}

void check_body(Route route, uint8_t choices, std::string_view text) {
  RequestFields f;
  const auto scan_ec = scan_request_fields(text, f);
  boost::system::error_code doc_ec;
  const json::value doc = parse_as_gateway(text, doc_ec);
  FUZZ_CHECK(!scan_ec == !doc_ec);
  if (scan_ec) return;
  check_against_document(f, doc, text);

  auto parsed = parse_request(route, std::string(text));
  if (!parsed) return;
  ParsedRequest& r = *parsed;
  static constexpr int64_t kCaps[] = {1, 16, 4096, INT32_MAX};
  if (choices & 2) check_cap(r, route, kCaps[(choices >> 2) & 3]);
  if (choices & 16) check_cap(r, route, kCaps[(choices >> 5) & 1]);  // again, often lower

  const ResumeMethod method = resume_method(r, choices & 64);
  Checkpoint checkpoint;
  checkpoint.begin_run();
  checkpoint.begin_run();
  checkpoint.text = "so far";
  checkpoint.tokens = 2;
  const json::object body = run_body(r, method, checkpoint, choices & 128);
  // JSON with the same fields. Not `== body`: Boost.JSON 1.81 parses numbers
  // to the nearest double only within an ulp or so (its precise mode came in
  // 1.83), so a long number may read back a digit off (docs/security.md).
  const json::value back = parse_as_gateway(json::serialize(body));
  FUZZ_CHECK(back.is_object() && back.get_object().size() == body.size());
  for (const auto& [key, value] : body) FUZZ_CHECK(back.get_object().contains(key));

  rewrite_model(r, "fallback-model");
  const std::string out = wire_body(r);
  auto again = parse_request(route, out);
  FUZZ_CHECK(again);
  FUZZ_CHECK(again->info.model == "fallback-model");
}

}  // namespace
}  // namespace arbiter

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  arbiter::fuzz::Input in(data, size);
  const uint8_t choices = in.byte();
  const auto route = (choices & 1) ? arbiter::Route::kCompletions : arbiter::Route::kChatCompletions;
  const std::string_view text = in.rest();
  arbiter::check_body(route, choices, text);
  // Every body is also read as a Responses request (its own parser).
  arbiter::check_body(arbiter::Route::kResponses, choices, text);
  return 0;
}
