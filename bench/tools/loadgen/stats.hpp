// Latency samples and their summary for the load generator.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>

namespace loadgen {

using Clock = std::chrono::steady_clock;

// Every sample is kept (not a histogram): runs are bounded, and exact
// percentiles make small differences between paths visible.
struct Samples {
  std::vector<int64_t> ns;

  void add(Clock::duration d) { ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()); }
  void merge(const Samples& other) { ns.insert(ns.end(), other.ns.begin(), other.ns.end()); }

  // Raw native-endian int64 nanoseconds: `loadgen merge` pools the samples of
  // several short runs of the same path into exact percentiles.
  bool save(const std::string& path) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(ns.data()), static_cast<std::streamsize>(ns.size() * sizeof(int64_t)));
    return static_cast<bool>(out);
  }
  bool load_append(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return false;
    const auto bytes = static_cast<std::size_t>(in.tellg());
    const std::size_t old = ns.size();
    ns.resize(old + bytes / sizeof(int64_t));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(ns.data() + old), static_cast<std::streamsize>((ns.size() - old) * sizeof(int64_t)));
    return static_cast<bool>(in);
  }
};

// One runner thread's counts; merged into one after the run.
struct Stats {
  uint64_t scheduled = 0;  // open loop: requests whose slot fell inside the window
  uint64_t completed = 0;  // 2xx responses fully read inside the window
  uint64_t errors = 0;
  uint64_t bytes_in = 0;
  std::map<std::string, uint64_t> error_kinds;
  Samples latency;  // open loop: from the scheduled time; closed loop: from send start
  Samples service;  // open loop only: from the actual send start
  // Streams: events received, time to the first event (from the send
  // start), and the gaps between consecutive events.
  uint64_t events = 0;
  Samples ttft;
  Samples itl;

  void error(const std::string& kind) {
    ++errors;
    ++error_kinds[kind];
  }

  void merge(const Stats& o) {
    scheduled += o.scheduled;
    completed += o.completed;
    errors += o.errors;
    bytes_in += o.bytes_in;
    for (const auto& [k, v] : o.error_kinds) error_kinds[k] += v;
    latency.merge(o.latency);
    service.merge(o.service);
    events += o.events;
    ttft.merge(o.ttft);
    itl.merge(o.itl);
  }
};

// Nearest-rank percentile of sorted samples, in microseconds.
inline double percentile_us(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return static_cast<double>(sorted[rank - 1]) / 1000.0;
}

inline double round1(double v) { return std::round(v * 10.0) / 10.0; }

inline boost::json::object summarize(Samples s) {
  auto& v = s.ns;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (auto x : v) sum += static_cast<double>(x);
  boost::json::object o;
  o["count"] = v.size();
  o["p50"] = round1(percentile_us(v, 0.50));
  o["p90"] = round1(percentile_us(v, 0.90));
  o["p99"] = round1(percentile_us(v, 0.99));
  o["p999"] = round1(percentile_us(v, 0.999));
  o["max"] = round1(v.empty() ? 0 : static_cast<double>(v.back()) / 1000.0);
  o["mean"] = round1(v.empty() ? 0 : sum / static_cast<double>(v.size()) / 1000.0);
  return o;
}

}  // namespace loadgen
