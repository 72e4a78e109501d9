#include "core/stream_usage.hpp"

namespace arbiter {
namespace {

constexpr std::string_view kAsk = R"("stream_options":{"include_usage":true},)";

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

}  // namespace arbiter
