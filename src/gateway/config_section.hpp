// A top-level config section that a feature owns: its YAML name, the key
// table and Config member it fills, and the feature's own checks of it. The
// feature defines its section in its own folder (e.g.
// stages/breaker/breaker_config_section.cpp) and config_sections.cpp lists it
// once; the config loader reads, and --print-config writes, every listed
// section in that order (docs/architecture.md, "Adding a stage").
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/config.hpp"
#include "yaml/setting_keys.hpp"

namespace arbiter {

struct ConfigSection {
  std::string_view name;
  // Reads the section's mapping at `name` (absent: the defaults stay) into
  // `c`, then the feature's checks.
  void (*read)(YamlReader& r, const YAML::Node& node, std::string_view name, Config& c);
  // The section's settings as a flow mapping's content: "key: value, ...".
  std::string (*write)(const Config& c);
};

// A section of flat keys: `Keys()` read into and written from `c.*Member`,
// then `Check(r, name, c)` when one is given.
template <class Settings, Settings Config::*Member, std::span<const SettingKey<Settings>> (*Keys)(),
          auto Check = nullptr>
constexpr ConfigSection flat_section(std::string_view name) {
  return {name,
          [](YamlReader& r, const YAML::Node& node, std::string_view path, Config& c) {
            read_section(Keys(), r, node, std::string(path), c.*Member);
            if constexpr (!std::is_same_v<decltype(Check), std::nullptr_t>) Check(r, path, c);
          },
          [](const Config& c) { return write_settings(Keys(), c.*Member, ", "); }};
}

// The features' sections, in the order they are read and printed.
std::span<const ConfigSection> feature_sections();

}  // namespace arbiter
