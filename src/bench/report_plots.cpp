#include "bench/report_plots.hpp"

#include <fstream>

#include "bench/svg_chart.hpp"

namespace arbiter::bench {
namespace {

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

std::vector<PlotFile> write_plots(const std::string& dir, const Scenario& scenario,
                                  const RunResults& results) {
  std::vector<std::pair<PlotFile, Chart>> charts;
  for (std::size_t c = 0; c < scenario.classes.size(); ++c) {
    const std::string& name = scenario.classes[c].name;
    Chart chart;
    chart.title = scenario.name + ": TTFT of completed " + name + " requests";
    chart.x_label = "time to first token, ms (log)";
    chart.y_label = "share of requests";
    chart.log_x = true;
    for (const PolicySummary& p : results.policies) {
      ChartSeries s;
      s.name = p.policy;
      const auto& cdf = p.classes[c].ttft_cdf_ms;
      for (std::size_t i = 0; i < cdf.size(); ++i) {
        s.points.emplace_back(std::max(cdf[i], 0.01f), static_cast<double>(i) / (cdf.size() - 1));
      }
      chart.series.push_back(std::move(s));
    }
    charts.push_back({{"ttft-cdf-" + name + ".svg", "TTFT CDF, " + name}, std::move(chart)});
  }
  Chart queue, util;
  queue.title = scenario.name + ": requests waiting (gateway queue; direct: engine queues)";
  util.title = scenario.name + ": engine utilisation (busy step time / wall time)";
  queue.x_label = util.x_label = "virtual time, s";
  queue.y_label = "requests waiting";
  util.y_label = "utilisation";
  if (results.info.mode == "live") {
    queue.title = scenario.name + ": requests sent and waiting for their first token (client view)";
    queue.x_label = "time, s";
  }
  for (const PolicySummary& p : results.policies) {
    ChartSeries q, u;
    q.name = u.name = p.policy;
    for (const Sample& s : p.series) {
      q.points.emplace_back(s.t, s.queued);
      u.points.emplace_back(s.t, s.utilisation);
    }
    queue.series.push_back(std::move(q));
    // Live mode cannot see the engines: no utilisation line.
    if (p.engine_known) util.series.push_back(std::move(u));
  }
  charts.push_back({{"queue-depth.svg", "queue depth over time"}, std::move(queue)});
  // Staged degradation: the load coefficient and the stage
  // it took, on one axis (stage 0-3 drawn as 0, 1/3, 2/3, 1).
  Chart stages;
  stages.title = scenario.name + ": pool load coefficient L and degradation stage";
  stages.x_label = "virtual time, s";
  stages.y_label = "L; stage / 3";
  for (const PolicySummary& p : results.policies) {
    if (p.series.empty() || std::isnan(p.series.front().load)) continue;
    ChartSeries l, st;
    l.name = p.policy + " L";
    st.name = p.policy + " stage";
    for (const Sample& s : p.series) {
      l.points.emplace_back(s.t, s.load);
      st.points.emplace_back(s.t, s.stage / 3);
    }
    stages.series.push_back(std::move(l));
    stages.series.push_back(std::move(st));
  }
  if (!stages.series.empty()) {
    charts.push_back({{"degradation.svg", "load coefficient and degradation stage over time"}, std::move(stages)});
  }
  if (!util.series.empty())
    charts.push_back({{"utilisation.svg", "engine utilisation over time"}, std::move(util)});

  std::vector<PlotFile> out;
  for (const auto& [file, chart] : charts) {
    if (!write_file(dir + "/" + file.file, render_svg(chart))) return {};
    out.push_back(file);
  }
  return out;
}

}  // namespace arbiter::bench
