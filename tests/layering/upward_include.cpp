// Must not compile (ctest layering_upward_include_fails): the gateway layer
// sees core, engine, http and observability, never the simulator above it.
#include "sim/sim_server.hpp"
