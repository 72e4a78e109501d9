// Live mode's per-request log (`arbiter-bench live --requests-out FILE`):
// one JSON object per line, first the run's header, then one line per
// request in the order they ended, with what the client saw and when.
// The chaos drills (bench/chaos.sh) compute recovery times from it and line
// it up with the faults they inject by the header's wall-clock start.
#pragma once

#include <string>

#include "bench/live_client.hpp"
#include "bench/request_spec.hpp"
#include "bench/scenario.hpp"

namespace arbiter::bench {

// {"run_start_unix": S, "scenario": ..., "label": ...}: every time on the
// following lines is in seconds from S (Unix time, in seconds).
std::string request_log_header(const Scenario& scenario, const std::string& label,
                               double run_start_unix);

// {"id", "class", "tenant", "arrival", "first_token", "last_token", "ended",
//  "outcome", "status", "tokens", "expected_tokens", "backend", "note"}:
// times in seconds from the run's start (-1: never), `outcome` as in
// results.json, `status` the HTTP status (0: none came), `tokens` the content
// events received, `expected_tokens` the answer's length the request asked
// for (min_tokens = max_tokens with --exact-lengths on; 0 with it off: the
// target decides), `backend` the gateway's x-arbiter-backend header.
std::string request_log_line(const Scenario& scenario, const RequestSpec& spec,
                             const ExchangeResult& result, bool exact_lengths);

}  // namespace arbiter::bench
