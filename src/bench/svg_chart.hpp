// A small SVG line chart writer: axes with ticks, one polyline per series,
// a legend. Enough for CDFs and time series; no dependencies.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace arbiter::bench {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;  // decades on x; points with x <= 0 are skipped
  std::vector<ChartSeries> series;
};

std::string render_svg(const Chart& chart);

}  // namespace arbiter::bench
