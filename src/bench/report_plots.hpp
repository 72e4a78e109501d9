// The run's SVG plots: TTFT CDF per class (a line per policy), gateway
// queue depth and engine utilisation over time (a line per policy).
#pragma once

#include <string>
#include <vector>

#include "bench/run_info.hpp"

namespace arbiter::bench {

struct PlotFile {
  std::string file;   // name inside the output directory
  std::string title;  // for links
};

// Writes the plots into `dir`; returns what it wrote, or empty on an I/O error.
std::vector<PlotFile> write_plots(const std::string& dir, const Scenario& scenario,
                                  const RunResults& results);

}  // namespace arbiter::bench
