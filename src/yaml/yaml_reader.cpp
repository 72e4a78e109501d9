#include "yaml/yaml_reader.hpp"

#include <algorithm>
#include <charconv>

namespace arbiter {

void YamlReader::error(const std::string& path, const std::string& message) {
  errors.push_back(path + ": " + message);
}

std::string YamlReader::join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string YamlReader::index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

bool YamlReader::map(const YAML::Node& node, const std::string& path,
                     std::initializer_list<std::string_view> known) {
  return map(node, path, std::vector<std::string_view>(known));
}

bool YamlReader::map(const YAML::Node& node, const std::string& path, const std::vector<std::string_view>& known) {
  if (!node.IsMap()) {
    error(path.empty() ? "(top level)" : path, "must be a mapping");
    return false;
  }
  std::vector<std::string> seen;
  for (const auto& kv : node) {
    // A complex key (`? [a, b]`, `? - x`) has no name: as<std::string>()
    // would throw out of the reader (found by fuzzing: fuzz/, docs/security.md).
    if (!kv.first.IsScalar()) {
      error(path.empty() ? "(top level)" : path, "a key must be a single value");
      continue;
    }
    const auto key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      error(join(path, key), "unknown key");
    } else if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      error(join(path, key), "given twice");
    }
    seen.push_back(key);
  }
  return true;
}

bool YamlReader::sequence(const YAML::Node& node, const std::string& path) {
  if (node.IsSequence()) return true;
  error(path, "must be a list");
  return false;
}

std::optional<std::string> YamlReader::scalar(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) {
    error(path, "must be a single value");
    return std::nullopt;
  }
  return n.Scalar();
}

std::optional<double> YamlReader::number(const YAML::Node& n, const std::string& path, double min, double max) {
  auto v = scalar(n, path);
  if (!v) return std::nullopt;
  double d = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
  if (ec != std::errc{} || end != v->data() + v->size()) {
    error(path, "must be a number");
    return std::nullopt;
  }
  if (!(d >= min && d <= max)) {
    error(path, "must be between " + format_number(min) + " and " + format_number(max));
    return std::nullopt;
  }
  return d;
}

std::optional<int64_t> YamlReader::integer(const YAML::Node& n, const std::string& path, int64_t min,
                                           int64_t max) {
  auto v = scalar(n, path);
  if (!v) return std::nullopt;
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc{} || end != v->data() + v->size()) {
    error(path, "must be an integer");
    return std::nullopt;
  }
  if (out < min || out > max) {
    error(path, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    return std::nullopt;
  }
  return out;
}

std::optional<bool> YamlReader::boolean(const YAML::Node& n, const std::string& path) {
  const auto v = scalar(n, path);
  if (v == "true") return true;
  if (v == "false") return false;
  if (v) error(path, "must be true or false");
  return std::nullopt;
}

void YamlReader::read(const YAML::Node& parent, const std::string& path, const char* key, bool& out) {
  if (const YAML::Node n = parent[key]) {
    if (auto b = boolean(n, join(path, key))) out = *b;
  }
}

void YamlReader::read(const YAML::Node& parent, const std::string& path, const char* key, std::string& out,
                      bool required) {
  const YAML::Node n = parent[key];
  if (!n) {
    if (required) error(join(path, key), "is required");
    return;
  }
  if (auto v = scalar(n, join(path, key))) {
    if (required && v->empty()) error(join(path, key), "must not be empty");
    out = *v;
  }
}

void YamlReader::read_list(const YAML::Node& parent, const std::string& path, const char* key,
                           std::vector<std::string>& out) {
  const YAML::Node n = parent[key];
  if (!n) return;
  const auto p = join(path, key);
  if (!sequence(n, p)) return;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (auto v = scalar(n[i], index(p, i))) out.push_back(*v);
  }
}

std::string YamlReader::quote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string YamlReader::format_number(double d) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, end);
}

}  // namespace arbiter
