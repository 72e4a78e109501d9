// Turns the JSON lines of one overhead run (direct, nginx, arbiter; open and
// closed loop) into the Markdown tables of docs/benchmarks.md.
#pragma once

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include <boost/json.hpp>

#include "json_fields.hpp"

namespace loadgen {

namespace json = boost::json;

// Overhead targets from issue 2.
inline constexpr double kTargetAddedP50Us = 100.0;
inline constexpr double kTargetAddedP99Us = 1000.0;
inline constexpr double kTargetPeakRatio = 0.8;

inline std::string fmt(double v, int decimals = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

inline std::string signed_fmt(double v) { return (v >= 0 ? "+" : "") + fmt(v); }

// CPU microseconds per completed request for one watched process group.
inline std::optional<double> cpu_us_per_req(const json::object& run, std::string_view who) {
  const auto* cpu = run.if_contains("cpu_s");
  if (cpu == nullptr || !cpu->is_object() || !cpu->as_object().contains(who)) return std::nullopt;
  const double completed = field(run, "completed");
  if (completed <= 0) return std::nullopt;
  return num(cpu->as_object().at(who)) * 1e6 / completed;
}

inline std::string cpu_cell(const json::object& run) {
  auto v = cpu_us_per_req(run, "proxy");
  return v ? fmt(*v, 1) : "-";
}

// "10 s in 5 interleaved rounds of 2 s, each after 0.5 s warm-up"
inline std::string window_text(const json::object& run) {
  const double rounds = field(run, "rounds");
  std::string s = fmt(field(run, "duration_s")) + " s";
  if (rounds > 1) {
    s += " in " + fmt(rounds) + " interleaved rounds of " + fmt(field(run, "round_duration_s"), 1) +
         " s, each after " + fmt(field(run, "warmup_s"), 1) + " s warm-up";
  } else {
    s += " after " + fmt(field(run, "warmup_s"), 1) + " s warm-up";
  }
  return s;
}

// Reads runs (one JSON object per line) and prints the Markdown report.
inline int report(const std::string& path, std::ostream& out) {
  const auto runs = read_runs(path);
  if (!runs) return 2;
  std::map<std::string, json::object> open, closed;  // by label
  std::vector<std::string> order;
  for (const auto& run : *runs) {
    const std::string label = text(run, "label");
    if (std::find(order.begin(), order.end(), label) == order.end()) order.push_back(label);
    (text(run, "mode") == "open" ? open : closed)[label] = run;
  }

  const json::object* direct_open = open.contains("direct") ? &open["direct"] : nullptr;
  if (!open.empty()) {
    const auto& any = open.begin()->second;
    out << "Latency at a fixed " << fmt(field(any, "rate")) << " req/s (open loop, " << window_text(any)
        << ", " << fmt(field(any, "connections"))
        << " keep-alive connections; microseconds from each request's scheduled send time "
           "to its full response):\n\n";
    out << "| Path | p50 | p90 | p99 | p99.9 | max | added p50 | added p99 | proxy CPU µs/req | requests | errors |\n";
    out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& label : order) {
      if (!open.contains(label)) continue;
      const auto& r = open[label];
      std::string added50 = "-", added99 = "-";
      if (direct_open != nullptr && label != "direct") {
        added50 = signed_fmt(field(r, "latency_us", "p50") - field(*direct_open, "latency_us", "p50"));
        added99 = signed_fmt(field(r, "latency_us", "p99") - field(*direct_open, "latency_us", "p99"));
      }
      out << "| " << label << " | " << fmt(field(r, "latency_us", "p50")) << " | "
          << fmt(field(r, "latency_us", "p90")) << " | " << fmt(field(r, "latency_us", "p99")) << " | "
          << fmt(field(r, "latency_us", "p999")) << " | " << fmt(field(r, "latency_us", "max")) << " | "
          << added50 << " | " << added99 << " | " << cpu_cell(r) << " | " << fmt(field(r, "requests"))
          << " | " << fmt(field(r, "errors")) << " |\n";
    }
    out << "\n";
  }

  const json::object* nginx_closed = closed.contains("nginx") ? &closed["nginx"] : nullptr;
  if (!closed.empty()) {
    const auto& any = closed.begin()->second;
    out << "Peak throughput (closed loop, " << fmt(field(any, "connections"))
        << " concurrent keep-alive connections, " << window_text(any)
        << "; latency from send to full response, µs):\n\n";
    out << "| Path | req/s | vs nginx | p50 | p99 | p99.9 | proxy CPU µs/req | errors |\n";
    out << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& label : order) {
      if (!closed.contains(label)) continue;
      const auto& r = closed[label];
      std::string ratio = "-";
      if (nginx_closed != nullptr && field(*nginx_closed, "throughput_rps") > 0 && label != "direct") {
        ratio = fmt(field(r, "throughput_rps") / field(*nginx_closed, "throughput_rps"), 2) + "x";
      }
      out << "| " << label << " | " << fmt(field(r, "throughput_rps")) << " | " << ratio << " | "
          << fmt(field(r, "latency_us", "p50")) << " | " << fmt(field(r, "latency_us", "p99")) << " | "
          << fmt(field(r, "latency_us", "p999")) << " | " << cpu_cell(r) << " | "
          << fmt(field(r, "errors")) << " |\n";
    }
    out << "\n";
  }

  // The verdict against the targets, when arbiter ran.
  if (direct_open != nullptr && open.contains("arbiter")) {
    auto added = [&](const json::object& r, std::string_view p) {
      return field(r, "latency_us", p) - field(*direct_open, "latency_us", p);
    };
    const bool have_nginx = open.contains("nginx");
    auto nginx_cell = [&](std::string_view p) { return have_nginx ? signed_fmt(added(open["nginx"], p)) + " µs" : "-"; };
    auto yes = [](bool ok) { return ok ? "met" : "**missed**"; };
    const double added50 = added(open["arbiter"], "p50");
    const double added99 = added(open["arbiter"], "p99");
    out << "| Target | arbiter | nginx, same run | |\n|---|---:|---:|---|\n";
    out << "| added median latency <= " << fmt(kTargetAddedP50Us) << " µs | " << signed_fmt(added50) << " µs | "
        << nginx_cell("p50") << " | " << yes(added50 <= kTargetAddedP50Us) << " |\n";
    out << "| added p99 latency <= " << fmt(kTargetAddedP99Us) << " µs | " << signed_fmt(added99) << " µs | "
        << nginx_cell("p99") << " | " << yes(added99 <= kTargetAddedP99Us) << " |\n";
    if (nginx_closed != nullptr && closed.contains("arbiter") && field(*nginx_closed, "throughput_rps") > 0) {
      const double ratio = field(closed["arbiter"], "throughput_rps") / field(*nginx_closed, "throughput_rps");
      out << "| peak throughput >= " << fmt(kTargetPeakRatio, 1) << "x nginx's | " << fmt(ratio, 2)
          << "x | 1.00x | " << yes(ratio >= kTargetPeakRatio) << " |\n";
    }
    const bool errors = field(open["arbiter"], "errors") > 0 ||
                        (closed.contains("arbiter") && field(closed["arbiter"], "errors") > 0);
    if (errors) out << "| no errors | see the JSON | | **missed** |\n";
    out << "\n";
  }
  return 0;
}

}  // namespace loadgen
