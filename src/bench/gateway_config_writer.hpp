// `arbiter-bench gateway-config`: an arbiter gateway config (YAML) that runs
// a scenario's gateway for real: its classes with their scheduler settings,
// its tenants with the `sk-bench-<tenant>` keys live mode sends, and one
// model pool of the scenario's engines, either the given engine URLs or
// `type: sim` engines inside the gateway.
#pragma once

#include <string>
#include <vector>

#include "bench/scenario.hpp"

namespace arbiter::bench {

struct GatewayConfigOptions {
  std::string model = "arbiter-bench";   // the pool's model name (live mode's --model)
  std::string policy = "hybrid";         // scheduler.policy: fifo, priority or hybrid; hybrid-no-degradation: hybrid, degradation off
  std::vector<std::string> engine_urls;  // empty: the scenario's engines as type: sim
  int port = 8080;                       // listener port (0: any free one)
  std::string command;                   // the command that wrote it, for the header
};

// The config text; `warnings` gets what of the scenario it cannot express.
std::string gateway_config_yaml(const Scenario& scenario, const GatewayConfigOptions& options,
                                std::vector<std::string>& warnings);

}  // namespace arbiter::bench
