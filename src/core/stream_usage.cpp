#include "core/stream_usage.hpp"

namespace arbiter {
namespace {

constexpr std::string_view kAsk = R"("stream_options":{"include_usage":true},)";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where the value of the first `key` (quoted, with its colon) starts,
// spaces skipped; npos when absent.
std::size_t value_after(std::string_view text, std::string_view key) {
  std::size_t i = text.find(key);
  if (i == std::string_view::npos) return i;
  i += key.size();
  while (i < text.size() && is_space(text[i])) ++i;
  return i;
}

}  // namespace

std::string ask_stream_usage(std::string_view body) {
  // A request body is a JSON object with members (the parser checked it):
  // its first non-space byte is '{' and a member follows.
  std::size_t open = 0;
  while (open < body.size() && body[open] != '{') ++open;
  std::string out;
  out.reserve(body.size() + kAsk.size());
  out.append(body.substr(0, open + 1));
  out.append(kAsk);
  out.append(body.substr(open + 1));
  return out;
}

void ask_stream_usage(boost::json::object& body) {
  if (!body.contains("stream_options")) body["stream_options"] = boost::json::object{{"include_usage", true}};
}

bool is_usage_chunk(std::string_view data) {
  const std::size_t usage = value_after(data, "\"usage\":");
  if (usage == std::string_view::npos || usage >= data.size() || data[usage] != '{') return false;
  std::size_t i = value_after(data, "\"choices\":");
  if (i == std::string_view::npos || i >= data.size() || data[i] != '[') return false;
  ++i;
  while (i < data.size() && is_space(data[i])) ++i;
  return i < data.size() && data[i] == ']';
}

}  // namespace arbiter
