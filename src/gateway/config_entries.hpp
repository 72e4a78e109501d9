// The entries of the config's lists (tenants, teams and their quotas,
// classes, models and their backends, prices) as tables of keys, like the
// flat sections (yaml/setting_keys.hpp): each key's name, what it takes,
// its reader (bounds checked) and writer, and whether an entry must have
// it. The config reader (config_yaml.cpp), --print-config (config_print.cpp)
// and the docs' agreement test (tests/unit/yaml/setting_keys_test.cpp) all
// go through these tables. What a table cannot say, rules between keys of
// one entry (a tenant needs a key or a certificate name; a backend's url
// and its type), is the entry's reader's own check after the table.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "yaml/setting_keys.hpp"

namespace arbiter {

std::span<const SettingKey<TenantConfig>> tenant_keys();
std::span<const SettingKey<quota::TeamConfig>> team_keys();
std::span<const SettingKey<quota::DynamicQuotaConfig>> dynamic_quota_keys();  // a team's dynamic_quota
std::span<const SettingKey<quota::QuotaLimits>> quota_keys();                  // tenants' and teams' quotas[]
// A class entry's own keys; its scheduling keys are class_policy_keys().
std::span<const SettingKey<ClassConfig>> class_keys();
std::span<const SettingKey<ClassMatch>> class_match_keys();  // a class's match
std::span<const SettingKey<ModelConfig>> model_keys();
std::span<const SettingKey<BackendConfig>> backend_keys();  // a model's backends[]
std::span<const SettingKey<ModelPrice>> price_keys();
std::span<const SettingKey<rollout::AliasConfig>> alias_keys();
std::span<const SettingKey<rollout::AliasTarget>> alias_target_keys();  // an alias's targets[]
std::span<const SettingKey<rollout::CanaryConfig>> canary_keys();       // an alias's canary
std::span<const SettingKey<rollout::ShadowConfig>> shadow_keys();       // an alias's shadow

// One entry at `path` through its table and its own check; false when it
// is not a mapping (nothing read).
bool read_tenant(YamlReader& r, const YAML::Node& node, const std::string& path, TenantConfig& out);
bool read_team(YamlReader& r, const YAML::Node& node, const std::string& path, quota::TeamConfig& out);
bool read_alias(YamlReader& r, const YAML::Node& node, const std::string& path, rollout::AliasConfig& out);
bool read_quota(YamlReader& r, const YAML::Node& node, const std::string& path, quota::QuotaLimits& out);
// A class named like a built-in one starts from the built-in's scheduling
// settings and cap (docs/configuration.md); its match rules are the file's.
bool read_class(YamlReader& r, const YAML::Node& node, const std::string& path, ClassConfig& out);
bool read_model(YamlReader& r, const YAML::Node& node, const std::string& path, ModelConfig& out);
bool read_backend(YamlReader& r, const YAML::Node& node, const std::string& path, BackendConfig& out);
bool read_price(YamlReader& r, const YAML::Node& node, const std::string& path, ModelPrice& out);

// Every entry of the list `node` (at `path`) that is a mapping, in order.
template <class Entry>
void read_entries(bool (*read)(YamlReader&, const YAML::Node&, const std::string&, Entry&), YamlReader& r,
                  const YAML::Node& node, const std::string& path, std::vector<Entry>& out) {
  if (!r.sequence(node, path)) return;
  for (std::size_t i = 0; i < node.size(); ++i) {
    Entry entry;
    if (read(r, node[i], YamlReader::index(path, i), entry)) out.push_back(std::move(entry));
  }
}

// A secret named by an environment variable or a file (its first line),
// read now so a missing one is a config error at start-up, not a 401 per
// request. Empty when neither is given or on error (reported).
std::string read_secret(YamlReader& r, const std::string& path, std::string_view env_key, const std::string& env,
                        std::string_view file_key, const std::string& file);

}  // namespace arbiter
