#include "core/usage.hpp"

#include <charconv>
#include <cstring>

namespace arbiter {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where the value of `"key":` inside `object` starts (spaces skipped), or
// npos when the key is absent. Keys are matched with their quotes and
// colon, so "prompt_tokens" does not match inside "prompt_tokens_details".
std::size_t value_at(std::string_view object, std::string_view quoted_key) {
  const std::size_t at = object.find(quoted_key);
  if (at == std::string_view::npos) return at;
  std::size_t i = at + quoted_key.size();
  while (i < object.size() && is_space(object[i])) ++i;
  return i;
}

// The JSON object starting at `begin` of `text` (braces balanced: usage
// holds numbers and nested *_details objects, no strings with braces in
// them); empty when there is none or it is cut. Brace to brace by memchr,
// not byte by byte: it runs on every whole answer.
std::string_view object_at(std::string_view text, std::size_t begin) {
  if (begin >= text.size() || text[begin] != '{') return {};
  const char* const end = text.data() + text.size();
  const char* p = text.data() + begin + 1;
  int depth = 1;
  while (p < end) {
    const auto* close = static_cast<const char*>(std::memchr(p, '}', static_cast<std::size_t>(end - p)));
    if (!close) return {};
    if (const auto* open = static_cast<const char*>(std::memchr(p, '{', static_cast<std::size_t>(close - p)))) {
      ++depth;
      p = open + 1;
      continue;
    }
    if (--depth == 0) return text.substr(begin, static_cast<std::size_t>(close + 1 - (text.data() + begin)));
    p = close + 1;
  }
  return {};
}

// Where the last `"usage":` of `body` starts, or npos: found from its 'u'
// by memrchr (an answer's usage is at or near its end, and the keys after
// it have no 'u'), not by comparing at every position from the end.
std::size_t last_usage_key(std::string_view body) {
  constexpr std::string_view kKey = "\"usage\":";
  std::size_t n = body.size();
  while (const auto* u = static_cast<const char*>(memrchr(body.data(), 'u', n))) {
    const auto at = static_cast<std::size_t>(u - body.data());
    if (at >= 1 && body.compare(at - 1, kKey.size(), kKey) == 0) return at - 1;
    n = at;
  }
  return std::string_view::npos;
}

// The non-negative integer value of `"key":` inside `object` (the text of
// one JSON object, nested objects included); nullopt when absent or not a
// plain integer.
std::optional<int64_t> integer_field(std::string_view object, std::string_view quoted_key) {
  const std::size_t i = value_at(object, quoted_key);
  if (i == std::string_view::npos) return std::nullopt;
  int64_t value = -1;
  const auto [end, ec] = std::from_chars(object.data() + i, object.data() + object.size(), value);
  if (ec != std::errc{} || value < 0) return std::nullopt;
  const char next = end < object.data() + object.size() ? *end : '\0';
  if (next != ',' && next != '}' && !is_space(next)) return std::nullopt;  // 1.5, 1e3
  return value;
}

// usage.prompt_tokens_details.cached_tokens; 0 when the engine does not
// report it (vLLM only with --enable-prompt-tokens-details) or it is not a
// plain integer no larger than the prompt.
int64_t cached_tokens(std::string_view usage, int64_t prompt_tokens, std::string_view details_key) {
  const std::size_t at = value_at(usage, details_key);
  if (at == std::string_view::npos) return 0;
  const std::string_view details = object_at(usage, at);  // empty for null
  const auto cached = integer_field(details, "\"cached_tokens\":");
  return cached && *cached <= prompt_tokens ? *cached : 0;
}

}  // namespace

std::optional<Usage> find_usage(std::string_view body) {
  // Hand-scanned rather than parsed: this runs on every whole answer, and a
  // JSON parser's set-up costs more than the scan (bench/request_cost.sh).
  const std::size_t at = last_usage_key(body);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t begin = at + std::string_view("\"usage\":").size();
  while (begin < body.size() && body[begin] == ' ') ++begin;
  const std::string_view object = object_at(body, begin);
  if (object.empty()) return std::nullopt;
  auto prompt = integer_field(object, "\"prompt_tokens\":");
  auto completion = integer_field(object, "\"completion_tokens\":");
  // The Responses API names them input and output tokens.
  const bool responses = !prompt && !completion;
  if (responses) {
    prompt = integer_field(object, "\"input_tokens\":");
    completion = integer_field(object, "\"output_tokens\":");
  }
  if (!prompt || !completion) return std::nullopt;
  return Usage{.prompt_tokens = *prompt, .completion_tokens = *completion,
               .cached_tokens = cached_tokens(object, *prompt,
                                              responses ? "\"input_tokens_details\":" : "\"prompt_tokens_details\":")};
}

bool is_usage_chunk(std::string_view data) {
  const std::size_t usage = value_at(data, "\"usage\":");
  if (usage >= data.size() || data[usage] != '{') return false;  // npos included
  std::size_t i = value_at(data, "\"choices\":");
  if (i >= data.size() || data[i] != '[') return false;
  ++i;
  while (i < data.size() && is_space(data[i])) ++i;
  return i < data.size() && data[i] == ']';
}

}  // namespace arbiter
