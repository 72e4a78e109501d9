// Virtual-time driver for one engine: submits each arrival at its time, runs
// steps back to back while there is work and jumps over idle gaps. Used by
// tests, the calibration check and offline what-if runs.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.hpp"

namespace arbiter::engine {

struct Arrival {
  double time = 0;  // seconds on the virtual clock
  SubmitRequest request;
};

struct Completed {
  RequestId id = 0;
  std::uint32_t output_tokens = 0;  // tokens delivered to the client
  RequestTiming timing;
};

struct ReplayResult {
  std::vector<Completed> completed;  // in finishing order
  std::vector<RequestId> rejected;   // submit() refused them
  double end_time = 0;               // when the last step ended
};

// Arrivals need not be sorted. Stops when all arrivals are in and the engine
// is idle, or when it stalls with nothing left to arrive.
ReplayResult replay(Engine& engine, std::vector<Arrival> arrivals);

}  // namespace arbiter::engine
