#include "support/metrics_text.hpp"

#include <cstdlib>
#include <sstream>

namespace arbiter::test {
namespace {

// Parses `a="x",b="y"` (values may hold escaped quotes).
Labels parse_labels(std::string_view s) {
  Labels out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto eq = s.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= s.size() || s[eq + 1] != '"') break;
    std::string key(s.substr(i, eq - i));
    std::string value;
    std::size_t j = eq + 2;
    for (; j < s.size() && s[j] != '"'; ++j) {
      if (s[j] == '\\' && j + 1 < s.size()) ++j;
      value += s[j];
    }
    out[key] = value;
    i = j + 1;
    if (i < s.size() && s[i] == ',') ++i;
  }
  return out;
}

}  // namespace

std::optional<double> metric_value(std::string_view text, std::string_view name, const Labels& match) {
  std::optional<double> sum;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::string_view l = line;
    const auto name_end = l.find_first_of("{ ");
    if (name_end == std::string_view::npos || l.substr(0, name_end) != name) continue;
    Labels labels;
    std::size_t rest = name_end;
    if (l[name_end] == '{') {
      const auto close = l.rfind('}');
      if (close == std::string_view::npos) continue;
      labels = parse_labels(l.substr(name_end + 1, close - name_end - 1));
      rest = close + 1;
    }
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = labels.find(k);
      if (it == labels.end() || it->second != v) ok = false;
    }
    if (!ok) continue;
    const std::string value(l.substr(rest));
    sum = sum.value_or(0.0) + std::strtod(value.c_str(), nullptr);
  }
  return sum;
}

}  // namespace arbiter::test
