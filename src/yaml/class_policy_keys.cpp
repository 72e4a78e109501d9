#include "yaml/class_policy_keys.hpp"

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

}  // namespace

std::span<const ClassPolicyKey> class_policy_keys() { return kKeys; }

std::vector<std::string_view> class_policy_key_names() {
  std::vector<std::string_view> out;
  for (const ClassPolicyKey& k : kKeys) out.push_back(k.key);
  return out;
}

void read_class_policy(YamlReader& r, const YAML::Node& node, const std::string& path, sched::ClassPolicy& p) {
  for (const ClassPolicyKey& k : kKeys) k.read(r, node, path, p);
  if (p.min_share > p.max_share) r.error(YamlReader::join(path, "min_share"), "must not exceed max_share");
}

std::string write_class_policy(const sched::ClassPolicy& p, std::string_view separator) {
  std::string out;
  for (const ClassPolicyKey& k : kKeys) {
    if (!out.empty()) out += separator;
    out += std::string(k.key) + ": " + k.write(p);
  }
  return out;
}

}  // namespace arbiter
