// Walks YAML nodes for the gateway's config reader and arbiter-bench's
// scenario reader alike, converting values and collecting "path: message"
// errors (every one, not just the first). A mapping's unknown keys and
// repeated keys are errors: yaml-cpp would keep both entries of a repeated
// key and read the first, a silent surprise for whoever edited the second.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter {

class YamlReader {
 public:
  std::vector<std::string> errors;  // "path: message", in reading order

  void error(const std::string& path, const std::string& message);

  static std::string join(const std::string& path, std::string_view key);  // "a.b"
  static std::string index(const std::string& path, std::size_t i);       // "a[3]"

  // True when `node` is a map; every key not in `known`, and every key given
  // twice, is an error.
  bool map(const YAML::Node& node, const std::string& path, std::initializer_list<std::string_view> known);
  bool map(const YAML::Node& node, const std::string& path, const std::vector<std::string_view>& known);
  bool sequence(const YAML::Node& node, const std::string& path);

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& path);
  // A number within [min, max] (the message names the bounds).
  std::optional<double> number(const YAML::Node& n, const std::string& path, double min, double max);
  std::optional<int64_t> integer(const YAML::Node& n, const std::string& path, int64_t min, int64_t max);
  std::optional<bool> boolean(const YAML::Node& n, const std::string& path);  // true or false

  // parent[key] into `out` when present; `out` keeps its default otherwise.
  void read(const YAML::Node& parent, const std::string& path, const char* key, bool& out);
  void read(const YAML::Node& parent, const std::string& path, const char* key, std::string& out,
            bool required = false);
  void read_list(const YAML::Node& parent, const std::string& path, const char* key,
                 std::vector<std::string>& out);

  // The shortest text that reads back as the same double (0.1, not
  // 0.10000000000000001): for messages and for written YAML alike.
  static std::string format_number(double d);
  // `text` as a double-quoted YAML scalar: `"` and `\` escaped, control
  // characters as \xNN, so any name reads back as itself.
  static std::string quote(std::string_view text);
};

}  // namespace arbiter
