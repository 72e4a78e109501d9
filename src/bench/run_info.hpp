// What a report states about the run besides its results: the scenario, the
// seed and the command that reproduces it.
#pragma once

#include <string>
#include <vector>

#include "bench/results.hpp"
#include "bench/scenario.hpp"

namespace arbiter::bench {

struct RunInfo {
  std::string mode = "virtual";
  std::string scenario_path;  // as given on the command line
  std::string command;        // the exact command line
  uint64_t seed = 0;
};

struct RunResults {
  RunInfo info;
  std::vector<PolicySummary> policies;  // in the order run
};

}  // namespace arbiter::bench
