// A map keyed by name that is looked up with a string_view, without
// building a std::string per lookup (request paths look tenants up by the
// name they hold as a view).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace arbiter {

struct StringViewHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <class T>
using StringMap = std::unordered_map<std::string, T, StringViewHash, std::equal_to<>>;

}  // namespace arbiter
