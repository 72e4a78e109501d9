// %XX escapes in a URL's path segment or query text, decoded.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace arbiter {

// %XX escapes decoded; '+' stays '+' (the usage report's parameters hold no
// space, and an RFC 3339 offset may come unencoded; a model name in a path
// keeps its '+'). nullopt for a '%' not followed by two hex digits. Boost.URL
// 1.81's parse_query reads a last value past the end of its view: not used.
std::optional<std::string> percent_decoded(std::string_view s);

}  // namespace arbiter
