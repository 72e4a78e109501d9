// report.md: the field report's before/after form. Headline figures per
// policy side by side, hybrid's change against `priority` (the field
// report's "before": static priority) and `fifo`, then the full per-class
// and per-tenant tables and the plots.
#pragma once

#include <string>
#include <vector>

#include "bench/report_plots.hpp"
#include "bench/run_info.hpp"

namespace arbiter::bench {

std::string render_markdown(const Scenario& scenario, const RunResults& results,
                            const std::vector<PlotFile>& plots);

}  // namespace arbiter::bench
