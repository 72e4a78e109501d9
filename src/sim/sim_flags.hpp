// Command-line flags of arbiter-sim, parsed into SimOptions (pure: no I/O,
// so bad flags can be unit-tested and reported with exit code 2).
#pragma once

#include <expected>
#include <span>
#include <string>
#include <string_view>

#include "sim/sim_options.hpp"

namespace arbiter::sim {

struct SimFlags {
  SimOptions options;
  std::string port_file;  // write the bound ports here, one per line, once listening
  unsigned threads = 1;   // I/O threads running every engine
  double drain_s = 5;     // on SIGTERM: how long requests in progress may take
  bool help = false;      // --help: print usage, exit 0
  bool list_profiles = false;  // --list-profiles: print them, exit 0
};

extern const std::string_view kSimUsage;

// `args` without the program name. "--flag value" and "--flag=value" both work.
std::expected<SimFlags, std::string> parse_sim_flags(std::span<const std::string_view> args);

}  // namespace arbiter::sim
