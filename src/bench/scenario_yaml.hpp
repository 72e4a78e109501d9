// Scenario files: YAML into a validated Scenario. Unknown keys and bad
// values are errors naming their key path (e.g. "classes[1].traffic.rate").
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "bench/scenario.hpp"

namespace arbiter::bench {

// The error is every problem found, one "path: message" per line.
std::expected<Scenario, std::string> parse_scenario(std::string_view yaml);
std::expected<Scenario, std::string> load_scenario(const std::string& path);

}  // namespace arbiter::bench
