#include "bench/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace arbiter::bench {
namespace {

constexpr double kWidth = 720, kHeight = 420;
constexpr double kLeft = 70, kRight = 160, kTop = 40, kBottom = 50;
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                    "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-2))
    std::snprintf(buf, sizeof buf, "%.0e", v);
  else
    std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// About five round steps covering [lo, hi].
std::vector<double> linear_ticks(double lo, double hi) {
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push_back(v);
  return out;
}

}  // namespace

std::string render_svg(const Chart& chart) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = 0, y_hi = 0;
  for (const auto& s : chart.series) {
    for (auto [x, y] : s.points) {
      if (chart.log_x && x <= 0) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_hi = std::max(y_hi, y);
    }
  }
  if (!(x_lo < x_hi)) {
    x_lo = x_lo == std::numeric_limits<double>::infinity() ? 0 : x_lo;
    x_hi = x_lo + 1;
  }
  if (!chart.log_x && x_lo > 0) x_lo = 0;  // time axes start at 0
  if (chart.log_x) {
    x_lo = std::pow(10, std::floor(std::log10(x_lo)));
    x_hi = std::pow(10, std::ceil(std::log10(x_hi)));
  }
  if (y_hi <= y_lo) y_hi = y_lo + 1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) {
    const double f =
        chart.log_x ? (std::log10(x) - std::log10(x_lo)) / (std::log10(x_hi) - std::log10(x_lo))
                    : (x - x_lo) / (x_hi - x_lo);
    return kLeft + f * plot_w;
  };
  auto py = [&](double y) { return kTop + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h; };

  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" "
                "height=\"100%%\" fill=\"white\"/>\n",
                kWidth, kHeight);
  out += buf;
  out += "<text x=\"" + number(kWidth / 2) +
         "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" + escape(chart.title) + "</text>\n";
  // Grid and tick labels.
  std::vector<double> xt;
  if (chart.log_x) {
    for (double v = x_lo; v <= x_hi * 1.0001; v *= 10) xt.push_back(v);
  } else {
    xt = linear_ticks(x_lo, x_hi);
  }
  for (double v : xt) {
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                  px(v), kTop, px(v), kTop + plot_h, px(v), kTop + plot_h + 16, number(v).c_str());
    out += buf;
  }
  for (double v : linear_ticks(y_lo, y_hi)) {
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                  kLeft, py(v), kLeft + plot_w, py(v), kLeft - 6, py(v) + 4, number(v).c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                "stroke=\"#333\"/>\n",
                kLeft, kTop, plot_w, plot_h);
  out += buf;
  out += "<text x=\"" + number(kLeft + plot_w / 2) + "\" y=\"" + number(kHeight - 10) +
         "\" text-anchor=\"middle\">" + escape(chart.x_label) + "</text>\n";
  out += "<text transform=\"translate(16," + number(kTop + plot_h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape(chart.y_label) + "</text>\n";
  // Series and legend.
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const auto& s = chart.series[i];
    const char* colour = kColours[i % std::size(kColours)];
    out += std::string("<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"") + colour +
           "\" points=\"";
    for (auto [x, y] : s.points) {
      if (chart.log_x && x <= 0) continue;
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", px(x), py(y));
      out += buf;
    }
    out += "\"/>\n";
    const double ly = kTop + 10 + 18 * static_cast<double>(i);
    std::snprintf(
        buf, sizeof buf,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>"
        "<text x=\"%.1f\" y=\"%.1f\">",
        kLeft + plot_w + 10, ly, kLeft + plot_w + 30, ly, colour, kLeft + plot_w + 36, ly + 4);
    out += buf;
    out += escape(s.name) + "</text>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace arbiter::bench
