// results.json: everything a run measured, and the consistency check
// (`arbiter-bench check`) that reads it back.
#pragma once

#include <string>
#include <vector>

#include "bench/run_info.hpp"

namespace arbiter::bench {

// Pretty-printed JSON; false when the file cannot be written.
bool write_results_json(const std::string& path, const Scenario& scenario,
                        const RunResults& results);

// Problems found in a results.json, one line each; empty when consistent:
// per policy, class and tenant the outcomes add up to `generated`, classes
// and tenants add up to the total, and every percentile row is ordered.
std::vector<std::string> check_results_json(const std::string& path);

}  // namespace arbiter::bench
