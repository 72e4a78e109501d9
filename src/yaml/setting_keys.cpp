#include "yaml/setting_keys.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>

namespace arbiter {

namespace {

using sched::ClassPolicy;
using sched::Duration;

std::string number_text(double d) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, end);
}

// The longest queue deadline written (30 days) stands for none.
constexpr int64_t kLongestMs = 30LL * 24 * 3600 * 1000;

int64_t to_ms(Duration d) {
  if (d >= std::chrono::duration_cast<Duration>(std::chrono::milliseconds(kLongestMs))) return kLongestMs;
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

void read_number(YamlReader& r, const YAML::Node& parent, const std::string& path, const char* key, double& out,
                 double min, double max) {
  if (const YAML::Node n = parent[key]) {
    if (auto d = r.number(n, YamlReader::join(path, key), min, max)) out = *d;
  }
}

template <class Int>
void read_integer(YamlReader& r, const YAML::Node& parent, const std::string& path, const char* key, Int& out,
                  int64_t min, int64_t max) {
  if (const YAML::Node n = parent[key]) {
    if (auto v = r.integer(n, YamlReader::join(path, key), min, max)) out = static_cast<Int>(*v);
  }
}

// Whole milliseconds, at most 30 days.
void read_ms(YamlReader& r, const YAML::Node& parent, const std::string& path, const char* key, Duration& out,
             int64_t min_ms) {
  int64_t ms = to_ms(out);
  read_integer(r, parent, path, key, ms, min_ms, kLongestMs);
  out = std::chrono::duration_cast<Duration>(std::chrono::milliseconds(ms));
}

constexpr ClassPolicyKey kKeys[] = {
    {"min_share", "number in [0, 1]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       read_number(r, n, p, "min_share", c.min_share, 0, 1);
     },
     [](const ClassPolicy& c) { return number_text(c.min_share); }},
    {"max_share", "number in [0.001, 1]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       read_number(r, n, p, "max_share", c.max_share, 0.001, 1);
     },
     [](const ClassPolicy& c) { return number_text(c.max_share); }},
    {"weight", "number in [0.001, 1000]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       read_number(r, n, p, "weight", c.weight, 0.001, 1000);
     },
     [](const ClassPolicy& c) { return number_text(c.weight); }},
    {"max_queue_wait_ms", "milliseconds, >= 1",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       read_ms(r, n, p, "max_queue_wait_ms", c.max_queue_wait, 1);
     },
     [](const ClassPolicy& c) { return std::to_string(to_ms(c.max_queue_wait)); }},
    {"preemptible", "true or false",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       r.read(n, p, "preemptible", c.preemptible);
     },
     [](const ClassPolicy& c) { return std::string(c.preemptible ? "true" : "false"); }},
    {"background", "true or false",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       r.read(n, p, "background", c.background);
     },
     [](const ClassPolicy& c) { return std::string(c.background ? "true" : "false"); }},
    {"max_queue", "integer in [1, 10000000]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       read_integer(r, n, p, "max_queue", c.max_queue, 1, 10'000'000);
     },
     [](const ClassPolicy& c) { return std::to_string(c.max_queue); }},
    {"max_queue_per_tenant", "integer in [1, 10000000]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       read_integer(r, n, p, "max_queue_per_tenant", c.max_queue_per_tenant, 1, 10'000'000);
     },
     [](const ClassPolicy& c) { return std::to_string(c.max_queue_per_tenant); }},
    {"debounce_ms", "milliseconds, >= 0",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       read_ms(r, n, p, "debounce_ms", c.debounce, 0);
     },
     [](const ClassPolicy& c) { return std::to_string(to_ms(c.debounce)); }},
    {"adaptive_debounce", "true or false",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       r.read(n, p, "adaptive_debounce", c.adaptive_debounce);
     },
     [](const ClassPolicy& c) { return std::string(c.adaptive_debounce ? "true" : "false"); }},
    {"priority", "integer in [-1000000, 1000000]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       read_integer(r, n, p, "priority", c.engine_priority, -1'000'000, 1'000'000);
     },
     [](const ClassPolicy& c) { return std::to_string(c.engine_priority); }},
    {"ttft_slo_ms", "milliseconds, >= 0 (0: none)",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, ClassPolicy& c) {
       read_ms(r, n, p, "ttft_slo_ms", c.ttft_slo, 0);
     },
     [](const ClassPolicy& c) { return std::to_string(to_ms(c.ttft_slo)); }},
};

// Whole milliseconds in [min_ms, max_ms] into a std::chrono::milliseconds.
void read_millis(YamlReader& r, const YAML::Node& parent, const std::string& path, const char* key,
                 std::chrono::milliseconds& out, int64_t min_ms, int64_t max_ms) {
  int64_t ms = out.count();
  read_integer(r, parent, path, key, ms, min_ms, max_ms);
  out = std::chrono::milliseconds(ms);
}

std::string bool_text(bool b) { return b ? "true" : "false"; }

constexpr SchedulerKey kSchedulerKeys[] = {
    {"policy", "fifo, priority or hybrid",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, SchedulerSettings& s) {
       std::string policy;
       r.read(n, p, "policy", policy);
       if (policy.empty()) return;
       if (auto parsed = sched::policy_from_string(policy)) {
         s.policy = *parsed;
       } else {
         r.error(YamlReader::join(p, "policy"), "must be fifo, priority or hybrid, not '" + policy + "'");
       }
     },
     [](const SchedulerSettings& s) { return std::string(sched::policy_name(s.policy)); }},
    {"aging_fraction", "number in [0, 1]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, SchedulerSettings& s) {
       read_number(r, n, p, "aging_fraction", s.aging_fraction, 0, 1);
     },
     [](const SchedulerSettings& s) { return number_text(s.aging_fraction); }},
    {"slo_lead_fraction", "number in [0, 1]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, SchedulerSettings& s) {
       read_number(r, n, p, "slo_lead_fraction", s.slo_lead_fraction, 0, 1);
     },
     [](const SchedulerSettings& s) { return number_text(s.slo_lead_fraction); }},
    {"early_reject_margin", "number in [0, 1000]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, SchedulerSettings& s) {
       read_number(r, n, p, "early_reject_margin", s.early_reject_margin, 0, 1000);
     },
     [](const SchedulerSettings& s) { return number_text(s.early_reject_margin); }},
    {"affinity_load_slack", "number in [0, 100]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, SchedulerSettings& s) {
       read_number(r, n, p, "affinity_load_slack", s.affinity_load_slack, 0, 100);
     },
     [](const SchedulerSettings& s) { return number_text(s.affinity_load_slack); }},
    {"preemption", "true or false",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, SchedulerSettings& s) {
       r.read(n, p, "preemption", s.preemption);
     },
     [](const SchedulerSettings& s) { return bool_text(s.preemption); }},
    {"preempt_after_ms", "milliseconds in [0, 3600000]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, SchedulerSettings& s) {
       read_millis(r, n, p, "preempt_after_ms", s.preempt_after, 0, 3'600'000);
     },
     [](const SchedulerSettings& s) { return std::to_string(s.preempt_after.count()); }},
    {"preempt_guard_ms", "milliseconds in [0, 3600000]",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, SchedulerSettings& s) {
       read_millis(r, n, p, "preempt_guard_ms", s.preempt_guard, 0, 3'600'000);
     },
     [](const SchedulerSettings& s) { return std::to_string(s.preempt_guard.count()); }},
    {"max_prefill_backlog_ms", "milliseconds in [0, 60000] (0: off)",
     [](YamlReader& r, const YAML::Node& n, const std::string& p, SchedulerSettings& s) {
       read_millis(r, n, p, "max_prefill_backlog_ms", s.max_prefill_backlog, 0, 60'000);
     },
     [](const SchedulerSettings& s) { return std::to_string(s.max_prefill_backlog.count()); }},
};

}  // namespace

std::span<const ClassPolicyKey> class_policy_keys() { return kKeys; }
std::span<const SchedulerKey> scheduler_keys() { return kSchedulerKeys; }

void read_class_policy(YamlReader& r, const YAML::Node& node, const std::string& path, sched::ClassPolicy& p) {
  read_settings(class_policy_keys(), r, node, path, p);
  if (p.min_share > p.max_share) r.error(YamlReader::join(path, "min_share"), "must not exceed max_share");
}

std::string write_class_policy(const sched::ClassPolicy& p, std::string_view separator) {
  return write_settings(class_policy_keys(), p, separator);
}

}  // namespace arbiter
