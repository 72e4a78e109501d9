// Config sections as tables of keys: each key's YAML name, what it takes,
// and how to read (bounds checked) and write it. The gateway's config, the
// bench's scenarios, --print-config and the bench's gateway config writer
// all go through these tables, so a key has one name and one set of
// bounds everywhere; a unit test checks that docs/configuration.md
// documents exactly these keys and defaults.
//   class_policy_keys(): a class's scheduling keys (gateway classes[],
//                        scenario classes[].scheduler)
//   scheduler_keys():    the scheduler section (gateway and scenario `scheduler:`)
//   listener_keys() ... log_keys(): the gateway's other flat sections (a
//                        feature's own sections are in its folder:
//                        gateway/config_section.hpp)
// The entries of lists (tenants, models and their backends, ...) are tables
// of the same kind: gateway/config_entries.hpp.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/adaptive_capacity.hpp"
#include "core/config.hpp"
#include "core/scheduler_config.hpp"
#include "yaml/yaml_reader.hpp"

namespace arbiter {

template <class Settings>
struct SettingKey {
  std::string_view key;   // as written in YAML
  std::string_view kind;  // "number in [0, 1]", "milliseconds, >= 0", ...
  // Reads the key's value node (at `path`, the key's full path) into the
  // settings (bounds checked).
  void (*read)(YamlReader& r, const YAML::Node& value, const std::string& path, Settings& s);
  // The setting's value as YAML text; "" leaves the key out (an optional
  // setting that is not set, or a key only ever read: api_keys).
  std::string (*write)(const Settings& s);
  // Absent from its mapping: "is required" (a list entry's name).
  bool required = false;
};

using ClassPolicyKey = SettingKey<sched::ClassPolicy>;
using SchedulerKey = SettingKey<sched::SchedulerTunables>;

std::span<const ClassPolicyKey> class_policy_keys();
std::span<const SchedulerKey> scheduler_keys();
std::span<const SettingKey<ListenerConfig>> listener_keys();
std::span<const SettingKey<AdminConfig>> admin_keys();
// listener.tls, a mapping inside listener (listener_keys() leaves it out).
std::span<const SettingKey<ListenerTlsConfig>> listener_tls_keys();
std::span<const SettingKey<LimitsConfig>> limits_keys();
std::span<const SettingKey<TimeoutsConfig>> timeouts_keys();
std::span<const SettingKey<AuthConfig>> auth_keys();
std::span<const SettingKey<EngineSignalsConfig>> engine_signals_keys();
std::span<const SettingKey<LogConfig>> log_keys();
// adaptive_capacity (core/adaptive_capacity.hpp): the gateway's section and
// a scenario's engine.adaptive_capacity.
std::span<const SettingKey<sched::AdaptiveCapacityConfig>> adaptive_capacity_keys();
// Staged degradation (docs/overload.md): the `degradation:` section and a
// class's `degrade:` mapping; shared by the gateway and arbiter-bench.
std::span<const SettingKey<overload::DegradationConfig>> degradation_keys();
std::span<const SettingKey<overload::ClassActions>> class_degrade_keys();
// The result cache (docs/cache.md): the `cache:` section and a class's
// `cache:` mapping.
std::span<const SettingKey<cache::CacheConfig>> cache_keys();
std::span<const SettingKey<cache::ClassCacheConfig>> class_cache_keys();

// Every key's name, less `except`: the known keys of a mapping.
template <class Settings>
std::vector<std::string_view> key_names(std::span<const SettingKey<Settings>> keys,
                                        std::initializer_list<std::string_view> except = {}) {
  std::vector<std::string_view> out;
  for (const auto& k : keys) {
    if (std::find(except.begin(), except.end(), k.key) == except.end()) out.push_back(k.key);
  }
  return out;
}

// Reads every key of `keys` present in `node` into `s`; a required one
// that is absent is an error.
template <class Settings>
void read_settings(std::span<const SettingKey<Settings>> keys, YamlReader& r, const YAML::Node& node,
                   const std::string& path, Settings& s) {
  for (const auto& k : keys) {
    const std::string key(k.key);
    if (const YAML::Node value = node[key]) {
      k.read(r, value, YamlReader::join(path, key), s);
    } else if (k.required) {
      r.error(YamlReader::join(path, key), "is required");
    }
  }
}

// A whole section: a mapping of exactly these keys (when present at all).
template <class Settings>
void read_section(std::span<const SettingKey<Settings>> keys, YamlReader& r, const YAML::Node& node,
                  const std::string& path, Settings& s) {
  if (node && r.map(node, path, key_names(keys))) read_settings(keys, r, node, path, s);
}

// A list entry: a mapping of exactly these keys; false when not a mapping.
template <class Settings>
bool read_entry(std::span<const SettingKey<Settings>> keys, YamlReader& r, const YAML::Node& node,
                const std::string& path, Settings& s) {
  if (!r.map(node, path, key_names(keys))) return false;
  read_settings(keys, r, node, path, s);
  return true;
}

// "key: value" for every key the writer does not leave out, joined with
// `separator` (a value that starts on its own line, a block list, follows
// the colon directly).
template <class Settings>
std::string write_settings(std::span<const SettingKey<Settings>> keys, const Settings& s,
                           std::string_view separator) {
  std::string out;
  for (const auto& k : keys) {
    const std::string value = k.write(s);
    if (value.empty()) continue;
    if (!out.empty()) out += separator;
    out += std::string(k.key) + (value.front() == '\n' ? ":" : ": ") + value;
  }
  return out;
}

// A class's keys, and min_share not above max_share.
void read_class_policy(YamlReader& r, const YAML::Node& node, const std::string& path, sched::ClassPolicy& p);
std::string write_class_policy(const sched::ClassPolicy& p, std::string_view separator);

}  // namespace arbiter
