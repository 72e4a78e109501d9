// docs/configuration.md's key tables, for the tests that hold the key
// tables (yaml/setting_keys, gateway/config_entries) to them.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

namespace arbiter::test {

inline std::string configuration_md() {
  std::ifstream in(ARBITER_SOURCE_DIR "/docs/configuration.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The key table after the first line of `doc` that starts with `heading`:
// key -> its default column.
inline std::map<std::string, std::string> documented_keys(const std::string& doc, std::string_view heading) {
  std::istringstream in(doc);
  std::string line;
  while (std::getline(in, line) && !line.starts_with(heading)) {
  }
  std::map<std::string, std::string> keys;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.starts_with("| `")) {
      in_table = true;
      const std::size_t key_end = line.find("` |");
      const std::string key = line.substr(3, key_end - 3);
      const std::size_t def_start = key_end + 4;
      keys[key] = line.substr(def_start, line.find(" |", def_start) - def_start);
    } else if (in_table) {
      break;  // the table ended
    }
  }
  return keys;
}

}  // namespace arbiter::test
