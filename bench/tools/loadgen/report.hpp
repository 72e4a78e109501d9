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
#include <vector>

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

// Streaming targets from issue 17.
inline constexpr double kTargetCpuPerEventRatio = 1.2;
inline constexpr double kTargetStreamThroughputRatio = 0.9;
inline constexpr double kTargetAddedItlP99Us = 1000.0;

// Streams (closed loop, one table): throughput, the proxy's CPU per
// response and per event, time to first event and the gaps between events,
// each against the direct path; then the verdict against issue 17's targets.
inline void report_stream(const std::vector<json::object>& runs, std::ostream& out) {
  std::map<std::string, json::object> by_label;
  std::vector<std::string> order;
  for (const auto& run : runs) {
    const std::string label = text(run, "label");
    if (!by_label.contains(label)) order.push_back(label);
    by_label[label] = run;
  }
  const auto& any = runs.front();
  const json::object* direct = by_label.contains("direct") ? &by_label["direct"] : nullptr;
  const json::object* nginx = by_label.contains("nginx") ? &by_label["nginx"] : nullptr;
  auto per_event = [](const json::object& r) -> std::optional<double> {
    const auto per_response = cpu_us_per_req(r, "proxy");
    const double events = field(r, "events"), completed = field(r, "completed");
    if (!per_response || events <= 0) return std::nullopt;
    return *per_response * completed / events;
  };
  auto added = [&](const json::object& r, std::string_view what, std::string_view p) {
    if (direct == nullptr || &r == direct) return std::string("-");
    return signed_fmt(field(r, what, p) - field(*direct, what, p));
  };
  out << fmt(field(any, "connections")) << " concurrent streams (closed loop, " << window_text(any) << "; "
      << fmt(field(any, "events") / std::max(1.0, field(any, "completed")), 0)
      << " events per response; TTFT from send to the first event, ITL the gaps between events "
         "as the client reads them, µs):\n\n";
  out << "| Path | responses/s | vs nginx | proxy CPU µs/response | µs/event | vs nginx | TTFT p50 | p99 | "
         "added p50 | added p99 | ITL p50 | p99 | added p50 | added p99 | errors |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& label : order) {
    const auto& r = by_label[label];
    std::string ratio = "-", cpu_ratio = "-";
    if (nginx != nullptr && label != "direct" && field(*nginx, "throughput_rps") > 0) {
      ratio = fmt(field(r, "throughput_rps") / field(*nginx, "throughput_rps"), 2) + "x";
      if (const auto a = per_event(r), b = per_event(*nginx); a && b && *b > 0) cpu_ratio = fmt(*a / *b, 2) + "x";
    }
    const auto ev = per_event(r);
    out << "| " << label << " | " << fmt(field(r, "throughput_rps")) << " | " << ratio << " | " << cpu_cell(r)
        << " | " << (ev ? fmt(*ev, 2) : "-") << " | " << cpu_ratio << " | " << fmt(field(r, "ttft_us", "p50"))
        << " | " << fmt(field(r, "ttft_us", "p99")) << " | " << added(r, "ttft_us", "p50") << " | "
        << added(r, "ttft_us", "p99") << " | " << fmt(field(r, "itl_us", "p50")) << " | "
        << fmt(field(r, "itl_us", "p99")) << " | " << added(r, "itl_us", "p50") << " | "
        << added(r, "itl_us", "p99") << " | " << fmt(field(r, "errors")) << " |\n";
  }
  out << "\n";
  if (nginx == nullptr || !by_label.contains("arbiter")) return;
  const auto& arbiter = by_label["arbiter"];
  auto yes = [](bool ok) { return ok ? "met" : "**missed**"; };
  out << "| Target | arbiter | |\n|---|---:|---|\n";
  if (const auto a = per_event(arbiter), b = per_event(*nginx); a && b && *b > 0) {
    out << "| proxy CPU per event <= " << fmt(kTargetCpuPerEventRatio, 1) << "x nginx's | " << fmt(*a / *b, 2)
        << "x | " << yes(*a / *b <= kTargetCpuPerEventRatio) << " |\n";
  }
  if (field(*nginx, "throughput_rps") > 0) {
    const double ratio = field(arbiter, "throughput_rps") / field(*nginx, "throughput_rps");
    out << "| streamed throughput >= " << fmt(kTargetStreamThroughputRatio, 1) << "x nginx's | " << fmt(ratio, 2)
        << "x | " << yes(ratio >= kTargetStreamThroughputRatio) << " |\n";
  }
  if (direct != nullptr) {
    const double itl = field(arbiter, "itl_us", "p99") - field(*direct, "itl_us", "p99");
    out << "| added inter-token latency p99 <= " << fmt(kTargetAddedItlP99Us) << " µs | " << signed_fmt(itl)
        << " µs | " << yes(itl <= kTargetAddedItlP99Us) << " |\n";
  }
  if (field(arbiter, "errors") > 0) out << "| no errors | see the JSON | **missed** |\n";
  out << "\n";
}

// Reads runs (one JSON object per line) and prints the Markdown report.
inline int report(const std::string& path, std::ostream& out) {
  const auto runs = read_runs(path);
  if (!runs) return 2;
  if (!runs->empty() && runs->front().contains("events")) {
    report_stream(*runs, out);
    return 0;
  }
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
      // "arbiter+log" is set against "nginx+log" when the run has it, as "arbiter" against "nginx".
      const auto plus = label.find('+');
      const std::string peer = plus == std::string::npos ? "nginx" : "nginx" + label.substr(plus);
      const json::object* base = closed.contains(peer) ? &closed[peer] : nginx_closed;
      std::string ratio = "-";
      if (base != nullptr && field(*base, "throughput_rps") > 0 && label != "direct") {
        ratio = fmt(field(r, "throughput_rps") / field(*base, "throughput_rps"), 2) + "x";
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
