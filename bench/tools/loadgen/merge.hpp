// Pools several short runs of the same path and mode into one result.
// bench/overhead.sh interleaves the paths in rounds (direct, nginx, arbiter,
// direct, ...) so that a burst of load from elsewhere on a shared machine
// lands on all of them alike instead of spoiling one path's only run.
#pragma once

#include <algorithm>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "json_fields.hpp"
#include "stats.hpp"

namespace loadgen {

inline int merge(const std::string& path, std::ostream& out) {
  const auto runs = read_runs(path);
  if (!runs) return 2;
  std::vector<std::pair<std::string, std::string>> order;  // (label, mode) as first seen
  std::map<std::pair<std::string, std::string>, std::vector<const json::object*>> groups;
  for (const auto& run : *runs) {
    const auto key = std::pair{text(run, "label"), text(run, "mode")};
    if (!groups.contains(key)) order.push_back(key);
    groups[key].push_back(&run);
  }

  for (const auto& key : order) {
    const auto& group = groups[key];
    json::object m = *group.front();  // settings (url, rate, connections, ...) are the same
    double duration = 0, requests = 0, completed = 0, errors = 0, events = 0;
    json::object kinds, cpu;
    Samples latency, service, ttft, itl;
    const bool stream = group.front()->contains("events");
    bool have_samples = true;
    for (const json::object* r : group) {
      duration += field(*r, "duration_s");
      requests += field(*r, "requests");
      completed += field(*r, "completed");
      errors += field(*r, "errors");
      if (stream) events += field(*r, "events");
      for (const char* obj : {"error_kinds", "cpu_s"}) {
        const json::value* v = r->if_contains(obj);
        if (v == nullptr || !v->is_object()) continue;
        auto& sum = obj == std::string_view("cpu_s") ? cpu : kinds;
        for (const auto& [k, x] : v->as_object()) {
          const double total = (sum.contains(k) ? num(sum[k]) : 0.0) + num(x);
          // Error counts stay integers; CPU seconds are fractional.
          if (&sum == &kinds) sum[k] = static_cast<uint64_t>(total);
          else sum[k] = total;
        }
      }
      const json::value* s = r->if_contains("samples");
      if (s == nullptr || !s->is_string() || !latency.load_append(std::string(s->as_string()))) {
        have_samples = false;
      } else {
        if (key.second == "open") service.load_append(std::string(s->as_string()) + ".service");
        if (stream) {
          ttft.load_append(std::string(s->as_string()) + ".ttft");
          itl.load_append(std::string(s->as_string()) + ".itl");
        }
      }
    }
    m["rounds"] = group.size();
    m["round_duration_s"] = field(*group.front(), "duration_s");
    m["duration_s"] = duration;
    m["requests"] = static_cast<uint64_t>(requests);
    m["completed"] = static_cast<uint64_t>(completed);
    m["errors"] = static_cast<uint64_t>(errors);
    m["error_kinds"] = std::move(kinds);
    m["cpu_s"] = std::move(cpu);
    m["throughput_rps"] = duration > 0 ? round1(completed / duration) : 0.0;
    if (stream) m["events"] = static_cast<uint64_t>(events);
    m.erase("samples");
    if (have_samples) {
      m["latency_us"] = summarize(std::move(latency));
      if (key.second == "open") m["service_us"] = summarize(std::move(service));
      if (stream) {
        m["ttft_us"] = summarize(std::move(ttft));
        m["itl_us"] = summarize(std::move(itl));
      }
    } else if (group.size() > 1) {
      std::cerr << "loadgen merge: " << key.first << " " << key.second
                << ": raw samples missing, keeping the first round's percentiles\n";
    }
    out << json::serialize(m) << "\n";
  }
  return 0;
}

}  // namespace loadgen
