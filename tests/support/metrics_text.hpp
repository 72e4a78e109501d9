// Reads sample values out of Prometheus text exposition (GET /metrics).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter::test {

using Labels = std::map<std::string, std::string>;

// Sum of the samples named exactly `name` whose labels include `match`;
// nullopt when no such sample exists.
std::optional<double> metric_value(std::string_view text, std::string_view name,
                                   const Labels& match = {});

}  // namespace arbiter::test
