#include "core/usage.hpp"

#include <boost/json.hpp>

namespace arbiter {

std::optional<Usage> find_usage(std::string_view body) {
  constexpr std::string_view kKey = "\"usage\":";
  const std::size_t at = body.rfind(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  boost::json::stream_parser parser;
  boost::system::error_code ec;
  const std::string_view rest = body.substr(at + kKey.size());
  // write_some stops at the end of the first value: the usage object.
  parser.write_some(rest.data(), rest.size(), ec);
  if (ec || !parser.done()) return std::nullopt;
  const boost::json::value v = parser.release();
  const boost::json::object* usage = v.if_object();
  if (usage == nullptr) return std::nullopt;
  const auto count = [&](std::string_view key) -> std::optional<int64_t> {
    const boost::json::value* n = usage->if_contains(key);
    if (n == nullptr || !n->is_int64() || n->as_int64() < 0) return std::nullopt;
    return n->as_int64();
  };
  const auto prompt = count("prompt_tokens");
  const auto completion = count("completion_tokens");
  if (!prompt || !completion) return std::nullopt;
  return Usage{.prompt_tokens = *prompt, .completion_tokens = *completion};
}

}  // namespace arbiter
