// Live mode: a scenario's workload as open-loop HTTP load against a running
// gateway (or an engine). The same RequestSpec stream as virtual mode
// (Workload, same seed); each request is sent at its arrival time, measured
// from the start in real time, whatever earlier answers did (no coordinated
// omission), over its own connection. Results go into the same Collector.
// Engine-side figures (utilisation, waste) cannot be seen over HTTP: the
// summary has engine_known = false.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "bench/live_request.hpp"
#include "bench/results.hpp"
#include "bench/scenario.hpp"
#include "bench/type_along.hpp"

namespace arbiter::bench {

struct LiveOptions {
  std::string target;  // http://HOST:PORT
  LiveRequestOptions request;
  std::string label = "live";       // the run's name in the results (the policy column)
  double max_s = 0;                 // > 0: stop generating after this many seconds
  uint32_t max_connections = 4096;  // requests in flight at most; beyond, not sent (rejected)
  // The target is an engine: the client itself aborts its previous request
  // with the same supersede key (an IDE does), as virtual mode's `direct`.
  bool client_supersede = false;
  // Non-empty: one JSON line per request into this file (request_log.hpp).
  std::string requests_out;
  // The engines' text, for keystrokes typing along a suggestion that has
  // not reached the client yet (bench/type_along.hpp).
  EngineText engine_text;
};

struct LiveResult {
  PolicySummary summary;
  std::vector<std::string> notes;  // counts of unexpected answers and unsent requests
};

// Runs until every request ended or duration (or max_s) + drain_s passed;
// an error when the target cannot be resolved or requests_out cannot be written.
std::expected<LiveResult, std::string> run_live(const Scenario& scenario, uint64_t seed,
                                                const LiveOptions& options);

}  // namespace arbiter::bench
