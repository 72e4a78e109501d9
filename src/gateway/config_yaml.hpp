// Loads and validates the YAML config. Every problem is reported, each with
// the path of the key it concerns (e.g. "models[0].backends[1].url"), and
// unknown keys are errors so a typo never silently falls back to a default.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"

namespace YAML {
class Node;
}

namespace arbiter {

using ConfigErrors = std::vector<std::string>;

std::expected<Config, ConfigErrors> parse_config(std::string_view yaml_text);
// The same from a document already loaded (the config fuzz harness looks
// through it first, and yaml-cpp's load is most of a small config's cost).
std::expected<Config, ConfigErrors> parse_config(const YAML::Node& root);
std::expected<Config, ConfigErrors> load_config_file(const std::string& path);

}  // namespace arbiter
