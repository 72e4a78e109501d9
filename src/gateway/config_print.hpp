// The effective configuration as YAML, every default filled in (`arbiter
// --config F --print-config`): what the gateway will really do with a file,
// including what a class named like a built-in one inherited. The output
// reads back to the same configuration (tests/unit/gateway/config_print_test.cpp).
// Keys are printed as their SHA-256 (api_key_sha256), never in plain.
#pragma once

#include <string>

#include "core/config.hpp"

namespace arbiter {

std::string config_to_yaml(const Config& config);

}  // namespace arbiter
