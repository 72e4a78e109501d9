// The scheduling keys of a class, in one table: the gateway's `classes[]`
// and arbiter-bench's `classes[].scheduler` read them through it (the same
// names and bounds in both files), --print-config and the bench's gateway
// config writer write them through it, and a unit test checks that
// docs/configuration.md documents exactly these keys.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/scheduler_config.hpp"
#include "yaml/yaml_reader.hpp"

namespace arbiter {

struct ClassPolicyKey {
  std::string_view key;   // as written in YAML
  std::string_view kind;  // "number in [0, 1]", "milliseconds", ...: for messages and docs
  // Reads parent[key] into the policy when present (bounds checked).
  void (*read)(YamlReader& r, const YAML::Node& parent, const std::string& path, sched::ClassPolicy& p);
  // The policy's value as YAML text.
  std::string (*write)(const sched::ClassPolicy& p);
};

std::span<const ClassPolicyKey> class_policy_keys();
// Every table key's name, e.g. to extend the known keys of a mapping.
std::vector<std::string_view> class_policy_key_names();
// Reads every table key present in `node` (min_share above max_share is an error).
void read_class_policy(YamlReader& r, const YAML::Node& node, const std::string& path, sched::ClassPolicy& p);
// "key: value" for every table key, joined with `separator`.
std::string write_class_policy(const sched::ClassPolicy& p, std::string_view separator);

}  // namespace arbiter
