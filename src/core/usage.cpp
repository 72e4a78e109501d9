#include "core/usage.hpp"

#include <charconv>

namespace arbiter {
namespace {

// The non-negative integer value of `"key":` inside `object` (the text of
// one JSON object, nested objects included); nullopt when absent or not a
// plain integer. Keys are matched with their quotes and colon, so
// "prompt_tokens" does not match inside "prompt_tokens_details".
std::optional<int64_t> integer_field(std::string_view object, std::string_view quoted_key) {
  const std::size_t at = object.find(quoted_key);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + quoted_key.size();
  while (i < object.size() && (object[i] == ' ' || object[i] == '\t' || object[i] == '\n')) ++i;
  int64_t value = -1;
  const auto [end, ec] = std::from_chars(object.data() + i, object.data() + object.size(), value);
  if (ec != std::errc{} || value < 0) return std::nullopt;
  const char next = end < object.data() + object.size() ? *end : '\0';
  if (next != ',' && next != '}' && next != ' ' && next != '\n') return std::nullopt;  // 1.5, 1e3
  return value;
}

}  // namespace

std::optional<Usage> find_usage(std::string_view body) {
  // Hand-scanned rather than parsed: this runs on every whole answer, and a
  // JSON parser's set-up costs more than the scan (bench/request_cost.sh).
  constexpr std::string_view kKey = "\"usage\":";
  const std::size_t at = body.rfind(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t begin = at + kKey.size();
  while (begin < body.size() && body[begin] == ' ') ++begin;
  if (begin >= body.size() || body[begin] != '{') return std::nullopt;
  // The object's end: braces balance (usage holds numbers and nested
  // *_details objects, no strings with braces in them).
  int depth = 0;
  std::size_t end = begin;
  for (; end < body.size(); ++end) {
    if (body[end] == '{') ++depth;
    if (body[end] == '}' && --depth == 0) break;
  }
  if (end == body.size()) return std::nullopt;
  const std::string_view object = body.substr(begin, end + 1 - begin);
  const auto prompt = integer_field(object, "\"prompt_tokens\":");
  const auto completion = integer_field(object, "\"completion_tokens\":");
  if (!prompt || !completion) return std::nullopt;
  return Usage{.prompt_tokens = *prompt, .completion_tokens = *completion};
}

}  // namespace arbiter
