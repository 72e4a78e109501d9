// HTTP fields compared the way HTTP gives them meaning, for the harnesses
// that check one parser's reading against Beast's.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace arbiter::fuzz {

using OwnedFields = std::vector<std::pair<std::string, std::string>>;

// A-Z lower-cased, every other byte as it is: names equal under this are the
// names Beast (and HTTP) take as one. Not `c | 0x20`, which also makes `^` a `~`
// (found by the fuzz smoke in CI: `a^` and `a~` sorted as one name).
inline char fold_case(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c; }

// Beast keeps fields of one name together (a repeated name goes after the
// last of its kind), so its order is the wire's only among fields of one
// name, which is all HTTP gives meaning to (RFC 9110 5.3): compared as such.
template <class Range>
OwnedFields by_name(const Range& fields) {
  OwnedFields out;
  for (const auto& [name, value] : fields) out.emplace_back(name, value);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::lexicographical_compare(a.first.begin(), a.first.end(), b.first.begin(), b.first.end(),
                                        [](char x, char y) { return fold_case(x) < fold_case(y); });
  });
  return out;
}

template <class Message>
OwnedFields fields_of(const Message& m) {
  OwnedFields out;
  for (const auto& f : m) out.emplace_back(f.name_string(), f.value());
  return out;
}

}  // namespace arbiter::fuzz
