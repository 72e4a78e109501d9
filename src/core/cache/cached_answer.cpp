#include "core/cache/cached_answer.hpp"

#include <array>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "core/sse.hpp"

namespace arbiter::cache {
namespace {

namespace json = boost::json;

bool null_or_absent(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return !v || v->is_null();
}

// A field that holds text or is null/absent; false for anything else.
bool read_text(const json::object& o, std::string_view key, std::string& out) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return true;
  if (!v->is_string()) return false;
  out.append(v->get_string().data(), v->get_string().size());
  return true;
}

// The fields of a message or a delta a replay reproduces; any other one
// that carries something (tool calls, audio, a refusal) makes the answer
// one a cache does not keep.
bool plain_message(const json::object& m, CachedAnswer& a) {
  for (const auto& [key, value] : m) {
    if (key == "content") {
      if (!read_text(m, "content", a.content)) return false;
    } else if (key == "reasoning_content") {
      if (!read_text(m, "reasoning_content", a.reasoning)) return false;
    } else if (key == "role") {
      if (!value.is_string() || value.get_string() != "assistant") return false;
    } else if (!value.is_null() && !(value.is_array() && value.get_array().empty())) {
      return false;
    }
  }
  return true;
}

std::optional<Usage> read_usage(const json::object& body) {
  const json::value* u = body.if_contains("usage");
  if (!u || !u->is_object()) return std::nullopt;
  const json::object& o = u->get_object();
  const json::value* p = o.if_contains("prompt_tokens");
  const json::value* c = o.if_contains("completion_tokens");
  if (!p || !c || !p->is_int64() || !c->is_int64()) return std::nullopt;
  Usage usage{.prompt_tokens = p->get_int64(), .completion_tokens = c->get_int64()};
  if (const json::value* d = o.if_contains("prompt_tokens_details"); d && d->is_object()) {
    if (const json::value* t = d->get_object().if_contains("cached_tokens"); t && t->is_int64()) {
      usage.cached_tokens = t->get_int64();
    }
  }
  return usage;
}

// One choice (index 0) of a whole answer or a chunk into `a`; false when
// it holds what a replay would lose. `chunk`: a stream's delta.
bool read_choice(Route route, const json::value& v, bool chunk, CachedAnswer& a) {
  if (!v.is_object()) return false;
  const json::object& c = v.get_object();
  if (const json::value* i = c.if_contains("index"); i && !(i->is_int64() && i->get_int64() == 0)) return false;
  if (!null_or_absent(c, "logprobs")) return false;
  if (const json::value* f = c.if_contains("finish_reason"); f && !f->is_null()) {
    if (!f->is_string()) return false;
    a.finish_reason.assign(f->get_string().data(), f->get_string().size());
  }
  if (route == Route::kCompletions) return read_text(c, "text", a.content);
  const json::value* m = c.if_contains(chunk ? "delta" : "message");
  if (!m || m->is_null()) return chunk;
  return m->is_object() && plain_message(m->get_object(), a);
}

json::value parse_or_null(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  return ec ? json::value() : v;
}

// Bytes JSON escapes: quotes, backslashes and control characters.
constexpr std::array<bool, 256> kEscaped = [] {
  std::array<bool, 256> e{};
  for (int c = 0; c < 0x20; ++c) e[c] = true;
  e['"'] = e['\\'] = true;
  return e;
}();

// `s` as JSON escapes it, without quotes; the runs between escapes
// appended whole.
void append_escaped_body(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!kEscaped[c]) continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
}

// `s` as a JSON string.
void append_escaped(std::string& out, std::string_view s) {
  out += '"';
  append_escaped_body(out, s);
  out += '"';
}

// A text as a JSON string: its escaped form when the answer has one.
void append_text(std::string& out, std::string_view raw, std::string_view escaped) {
  if (escaped.empty() && !raw.empty()) return append_escaped(out, raw);
  out += '"';
  out += escaped;
  out += '"';
}

void append_usage(std::string& out, const Usage& u) {
  out += "\"usage\":{\"prompt_tokens\":" + std::to_string(u.prompt_tokens) +
         ",\"completion_tokens\":" + std::to_string(u.completion_tokens) +
         ",\"total_tokens\":" + std::to_string(u.prompt_tokens + u.completion_tokens);
  if (u.cached_tokens > 0) out += ",\"prompt_tokens_details\":{\"cached_tokens\":" + std::to_string(u.cached_tokens) + "}";
  out += '}';
}

// `{"id":...,"object":...,"created":...,"model":...,` : the opening every
// object of an answer shares.
void append_opening(std::string& out, std::string_view object, std::string_view id, int64_t created,
                    std::string_view model) {
  out += "{\"id\":";
  append_escaped(out, id);
  out += ",\"object\":\"";
  out += object;
  out += "\",\"created\":" + std::to_string(created) + ",\"model\":";
  append_escaped(out, model);
  out += ',';
}

}  // namespace

std::optional<CachedAnswer> answer_from_whole(Route route, std::string_view text) {
  const json::value v = parse_or_null(text);
  if (!v.is_object()) return std::nullopt;
  const json::object& body = v.get_object();
  if (route == Route::kEmbeddings) {
    const json::value* data = body.if_contains("data");
    if (!data || !data->is_array() || data->get_array().empty()) return std::nullopt;
    return CachedAnswer{.route = route, .content = std::string(text), .finish_reason = {}, .usage = std::nullopt};
  }
  const json::value* choices = body.if_contains("choices");
  if (!choices || !choices->is_array() || choices->get_array().size() != 1) return std::nullopt;
  CachedAnswer a{.route = route};
  if (!read_choice(route, choices->get_array()[0], false, a) || a.finish_reason.empty()) return std::nullopt;
  a.usage = read_usage(body);
  return a;
}

std::optional<CachedAnswer> answer_from_stream(Route route, std::string_view sse) {
  CachedAnswer a{.route = route};
  bool ok = true;
  bool done = false;
  SseFramer framer;
  framer.feed(sse, [&](std::string_view event) {
    if (!ok) return;
    if (done || event.find("\nevent:") != std::string_view::npos || event.starts_with("event:")) {
      ok = false;  // an event after [DONE], or a named one (an error)
      return;
    }
    if (is_done_event(event)) {
      done = true;
      return;
    }
    const json::value v = parse_or_null(event_data(event));
    if (!v.is_object() || v.get_object().contains("error")) {
      ok = false;
      return;
    }
    const json::object& chunk = v.get_object();
    if (auto usage = read_usage(chunk)) a.usage = usage;
    const json::value* choices = chunk.if_contains("choices");
    if (!choices || !choices->is_array()) {
      ok = false;
      return;
    }
    for (const json::value& c : choices->get_array()) ok = ok && read_choice(route, c, true, a);
  });
  if (!ok || !done || !framer.pending().empty() || a.finish_reason.empty()) return std::nullopt;
  return a;
}

std::optional<CachedAnswer> read_answer(const StoredAnswer& stored) {
  if (stored.answer) return stored.answer;
  auto a = stored.stream ? answer_from_stream(stored.route, stored.raw) : answer_from_whole(stored.route, stored.raw);
  if (!a) return a;
  if (!a->usage) a->usage = stored.usage;
  if (a->route == Route::kEmbeddings) return a;  // written as it came
  append_escaped_body(a->content_json, a->content);
  append_escaped_body(a->reasoning_json, a->reasoning);
  return a;
}

std::string render_whole(const CachedAnswer& a, std::string_view id, int64_t created, std::string_view model) {
  if (a.route == Route::kEmbeddings) return a.content;
  const bool chat = a.route == Route::kChatCompletions;
  std::string out;
  out.reserve(a.content.size() + a.reasoning.size() + 320);
  append_opening(out, chat ? "chat.completion" : "text_completion", id, created, model);
  out += "\"choices\":[{\"index\":0,";
  if (chat) {
    out += "\"message\":{\"role\":\"assistant\",\"content\":";
    append_text(out, a.content, a.content_json);
    if (!a.reasoning.empty()) {
      out += ",\"reasoning_content\":";
      append_text(out, a.reasoning, a.reasoning_json);
    }
    out += '}';
  } else {
    out += "\"text\":";
    append_text(out, a.content, a.content_json);
  }
  out += ",\"logprobs\":null,\"finish_reason\":";
  append_escaped(out, a.finish_reason);
  out += "}]";
  if (a.usage) {
    out += ',';
    append_usage(out, *a.usage);
  }
  out += '}';
  return out;
}

std::string render_stream(const CachedAnswer& a, std::string_view id, int64_t created, std::string_view model,
                          bool include_usage) {
  const bool chat = a.route == Route::kChatCompletions;
  const std::string_view object = chat ? "chat.completion.chunk" : "text_completion";
  std::string out;
  out.reserve(a.content.size() + a.reasoning.size() + 1024);
  // One chunk: `choice` is the choice's fields after its index.
  const auto chunk = [&](std::string_view choice) {
    out += "data: ";
    append_opening(out, object, id, created, model);
    out += "\"choices\":[{\"index\":0,";
    out += choice;
    out += include_usage ? "}],\"usage\":null}\n\n" : "}]}\n\n";  // as OpenAI's chunks before the usage one
  };
  // A text chunk (`text` escaped already); `finish` set on the last one.
  const auto text_chunk = [&](std::string_view field, std::string_view text, std::string_view finish) {
    std::string choice = chat ? "\"delta\":{" : "";
    if (!text.empty() || !chat) {
      choice += '"';
      choice += field;
      choice += "\":\"";
      choice += text;
      choice += '"';
    }
    if (chat) choice += '}';
    choice += ",\"logprobs\":null,\"finish_reason\":";
    if (finish.empty()) {
      choice += "null";
    } else {
      append_escaped(choice, finish);
    }
    chunk(choice);
  };
  if (chat) chunk("\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null");
  const std::string_view field = chat ? "content" : "text";
  // The texts escaped (made now when the answer was not kept escaped).
  std::string made;
  const auto escaped = [&](std::string_view raw, std::string_view json) -> std::string_view {
    if (!json.empty() || raw.empty()) return json;
    made.clear();
    append_escaped_body(made, raw);
    return made;
  };
  if (!a.reasoning.empty()) text_chunk("reasoning_content", escaped(a.reasoning, a.reasoning_json), {});
  // As engines send it: the text, then its last word with the finish reason
  // (a space is never part of an escape: the split is the same).
  const std::string_view content = escaped(a.content, a.content_json);
  const std::size_t split = content.rfind(' ');
  const std::size_t last = split == std::string_view::npos || split == 0 ? 0 : split;
  if (last > 0) text_chunk(field, content.substr(0, last), {});
  text_chunk(field, content.substr(last), a.finish_reason);
  if (include_usage && a.usage) {
    out += "data: ";
    append_opening(out, object, id, created, model);
    out += "\"choices\":[],";
    append_usage(out, *a.usage);
    out += "}\n\n";
  }
  out += "data: [DONE]\n\n";
  return out;
}

}  // namespace arbiter::cache
