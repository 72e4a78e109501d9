// The config versions a gateway keeps: the one running and the last three
// good ones before it, each with its hash, when it was applied and where it
// came from (start-up file, SIGHUP, the admin API, a rollback). A rejected
// config never becomes a version. Not thread-safe: the reloader's lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter {

struct ConfigVersion {
  std::string hash;  // 16 hex digits (XXH3-64 of the YAML text)
  std::chrono::system_clock::time_point applied_at;
  std::string source;  // "startup:<file>", "sighup:<file>", "admin", "rollback:<hash>"
  std::string text;    // the YAML as given
};

// The version hash of a config's YAML text.
std::string config_hash(std::string_view yaml_text);

class ConfigVersions {
 public:
  static constexpr std::size_t kKeptPrevious = 3;

  explicit ConfigVersions(ConfigVersion first) : current_(std::move(first)) {}

  // `next` runs now: the current one becomes the newest previous (a version
  // with next's hash leaves the list: each hash once), the oldest beyond
  // kKeptPrevious is forgotten.
  void applied(ConfigVersion next);

  const ConfigVersion& current() const { return current_; }
  const std::vector<ConfigVersion>& previous() const { return previous_; }  // newest first
  // The current or a previous version whose hash is `hash` or starts with
  // it (at least 6 digits, and only one such); null when none.
  const ConfigVersion* find(std::string_view hash) const;

 private:
  ConfigVersion current_;
  std::vector<ConfigVersion> previous_;
};

}  // namespace arbiter
