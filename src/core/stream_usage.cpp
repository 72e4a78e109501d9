#include "core/stream_usage.hpp"

#include <algorithm>

namespace arbiter {

std::size_t stream_usage_ask_at(std::string_view body) {
  // A request body is a JSON object with members (the parser checked it):
  // its first non-space byte is '{' and a member follows.
  std::size_t open = 0;
  while (open < body.size() && body[open] != '{') ++open;
  return std::min(open + 1, body.size());
}

void ask_stream_usage(boost::json::object& body) {
  if (!body.contains("stream_options")) body["stream_options"] = boost::json::object{{"include_usage", true}};
}

}  // namespace arbiter
