// Reading numbers out of the run objects loadgen prints.
#pragma once

#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

namespace loadgen {

namespace json = boost::json;

inline double num(const json::value& v) {
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  return 0;
}

inline double field(const json::object& run, std::string_view a, std::string_view b = {}) {
  const json::value* v = run.if_contains(a);
  if (v == nullptr) return 0;
  if (!b.empty()) {
    if (!v->is_object()) return 0;
    v = v->as_object().if_contains(b);
    if (v == nullptr) return 0;
  }
  return num(*v);
}

inline std::string text(const json::object& run, std::string_view key) {
  const json::value* v = run.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string("?");
}

// One JSON object per line, as `loadgen open|closed` print them.
inline std::optional<std::vector<json::object>> read_runs(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "loadgen: cannot open " << path << "\n";
    return std::nullopt;
  }
  std::vector<json::object> runs;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    boost::system::error_code ec;
    auto v = json::parse(line, ec);
    if (ec || !v.is_object()) {
      std::cerr << "loadgen: " << path << ": skipping a line that is not a JSON object\n";
      continue;
    }
    runs.push_back(std::move(v.as_object()));
  }
  return runs;
}

}  // namespace loadgen
