// What a report states about the run besides its results: the scenario, the
// seed and the command that reproduces it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bench/results.hpp"
#include "bench/scenario.hpp"

namespace arbiter::bench {

struct RunInfo {
  std::string mode = "virtual";  // or "live"
  std::string scenario_path;     // as given on the command line
  std::string command;           // the exact command line
  uint64_t seed = 0;
  std::string target;              // live: the URL loaded
  std::string gateway_config;      // live: the gateway config it ran with, as given
  std::vector<std::string> notes;  // live: unexpected answers, requests not sent
};

struct RunResults {
  RunInfo info;
  std::vector<PolicySummary> policies;  // in the order run
};

// The summary of the policy named `name`; nullptr when it was not run.
inline const PolicySummary* find_policy(const RunResults& results, std::string_view name) {
  for (const PolicySummary& p : results.policies) {
    if (p.policy == name) return &p;
  }
  return nullptr;
}

}  // namespace arbiter::bench
