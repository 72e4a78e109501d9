#include "bench/scenario_yaml.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <set>
#include <sstream>

#include "core/config.hpp"
#include "yaml/setting_keys.hpp"
#include "yaml/yaml_reader.hpp"

namespace arbiter::bench {
namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// arbiter-bench's reading of values on top of the shared YamlReader:
// numbers with their bounds (integers as whole numbers).
class Reader : public YamlReader {
 public:
  using YamlReader::read;

  void read(const YAML::Node& parent, const std::string& path, const char* key, double& out,
            double min = 0, double max = kUnbounded) {
    if (const YAML::Node n = parent[key]) {
      if (auto d = number(n, join(path, key), min, max)) out = *d;
    }
  }
  void read(const YAML::Node& parent, const std::string& path, const char* key,
            std::optional<double>& out, double min = 0, double max = kUnbounded) {
    if (const YAML::Node n = parent[key]) {
      if (auto d = number(n, join(path, key), min, max)) out = *d;
    }
  }
  template <class Int>
  requires std::is_integral_v<Int>
  void read(const YAML::Node& parent, const std::string& path, const char* key, Int& out,
            double min = 0, double max = static_cast<double>(std::numeric_limits<Int>::max())) {
    if (const YAML::Node n = parent[key]) {
      const auto p = join(path, key);
      auto d = number(n, p, min, max);
      if (d && *d != static_cast<double>(static_cast<Int>(*d))) {
        error(p, "must be an integer");
      } else if (d) {
        out = static_cast<Int>(*d);
      }
    }
  }
};

// `N` (fixed), or {dist: fixed|uniform|lognormal, value|min|max|mean|sigma}.
void read_length(Reader& r, const YAML::Node& parent, const std::string& parent_path,
                 const char* key, LengthDist& out) {
  const YAML::Node n = parent[key];
  if (!n) return;
  const auto path = Reader::join(parent_path, key);
  if (n.IsScalar()) {
    if (auto d = r.number(n, path, 0, 1e9)) out = {.kind = LengthDist::Kind::kFixed, .value = *d};
    return;
  }
  if (!r.map(n, path, {"dist", "value", "min", "max", "mean", "sigma"})) return;
  std::string dist = "fixed";
  r.read(n, path, "dist", dist);
  LengthDist d;
  if (dist == "fixed") {
    d.kind = LengthDist::Kind::kFixed;
    r.read(n, path, "value", d.value, 0, 1e9);
  } else if (dist == "uniform") {
    d.kind = LengthDist::Kind::kUniform;
    r.read(n, path, "min", d.min);
    r.read(n, path, "max", d.max);
    if (d.max < d.min) r.error(Reader::join(path, "max"), "must be at least min");
  } else if (dist == "lognormal") {
    d.kind = LengthDist::Kind::kLognormal;
    d.max = std::numeric_limits<uint32_t>::max();
    r.read(n, path, "mean", d.value, 0, 1e9);
    r.read(n, path, "sigma", d.sigma, 0, 5);
    r.read(n, path, "min", d.min);
    r.read(n, path, "max", d.max);
    if (d.max < d.min) r.error(Reader::join(path, "max"), "must be at least min");
  } else {
    r.error(Reader::join(path, "dist"), "must be fixed, uniform or lognormal");
  }
  out = d;
}

void read_rate(Reader& r, const YAML::Node& traffic, const std::string& path, RateSpec& out) {
  r.read(traffic, path, "rate", out.base, 0, 1e7);
  if (const YAML::Node changes = traffic["rate_changes"]) {
    const auto cpath = Reader::join(path, "rate_changes");
    if (!changes.IsSequence()) {
      r.error(cpath, "must be a list");
    } else {
      for (std::size_t i = 0; i < changes.size(); ++i) {
        const auto p = Reader::index(cpath, i);
        if (!r.map(changes[i], p, {"at_s", "for_s", "factor"})) continue;
        RateChange c;
        r.read(changes[i], p, "at_s", c.at_s);
        r.read(changes[i], p, "for_s", c.for_s);
        r.read(changes[i], p, "factor", c.factor, 0, 1e4);
        out.changes.push_back(c);
      }
    }
  }
  if (const YAML::Node day = traffic["day"]) {
    const auto p = Reader::join(path, "day");
    if (r.map(day, p, {"period_s", "night", "peak", "start_hour"})) {
      DayCurve d;
      r.read(day, p, "period_s", d.period_s, 1e-3);
      r.read(day, p, "night", d.night, 0, 1e4);
      r.read(day, p, "peak", d.peak, 0, 1e4);
      r.read(day, p, "start_hour", d.start_hour, 0, 24);
      out.day = d;
    }
  }
}

void read_traffic(Reader& r, const YAML::Node& n, const std::string& path, TrafficSpec& t) {
  if (!r.map(n, path, {"kind",        "rate",   "rate_changes", "day",         "arrival",
                       "burstiness",  "prompt", "output",       "max_tokens",  "deadline_s",
                       "patience",    "prefix", "developers",   "keystrokes",  "keystroke_gap_ms",
                       "file_tokens", "turns",  "think_s",      "max_context", "jobs",
                       "rhythm_spread", "client_debounce_ms", "type_along"})) {
    return;
  }
  std::string kind = "requests";
  r.read(n, path, "kind", kind);
  if (kind == "requests")
    t.kind = TrafficKind::kRequests;
  else if (kind == "typing")
    t.kind = TrafficKind::kTyping;
  else if (kind == "chat")
    t.kind = TrafficKind::kChat;
  else if (kind == "backlog")
    t.kind = TrafficKind::kBacklog;
  else
    r.error(Reader::join(path, "kind"), "must be requests, typing, chat or backlog");
  // Defaults per kind, from the BRIEF's load shapes.
  if (t.kind == TrafficKind::kTyping) {
    t.keystrokes = {.kind = LengthDist::Kind::kUniform, .min = 4, .max = 6};
    t.keystroke_gap_ms = {.kind = LengthDist::Kind::kUniform, .min = 100, .max = 200};
    t.file_tokens = {.kind = LengthDist::Kind::kUniform, .min = 800, .max = 1200};
    t.max_tokens = 128;
  }
  if (t.kind == TrafficKind::kChat) {
    t.turns = {.kind = LengthDist::Kind::kUniform, .min = 3, .max = 8};
    t.think_s = {.kind = LengthDist::Kind::kUniform, .min = 2, .max = 4};
  }
  read_rate(r, n, path, t.rate);
  std::string arrival = "poisson";
  r.read(n, path, "arrival", arrival);
  if (arrival == "gamma")
    t.arrival.gamma = true;
  else if (arrival != "poisson")
    r.error(Reader::join(path, "arrival"), "must be poisson or gamma");
  r.read(n, path, "burstiness", t.arrival.burstiness, 1e-3, 1e3);
  if (n["burstiness"] && !t.arrival.gamma) {
    r.error(Reader::join(path, "burstiness"), "needs arrival: gamma");
  }
  read_length(r, n, path, "prompt", t.prompt);
  read_length(r, n, path, "output", t.output);
  r.read(n, path, "max_tokens", t.max_tokens, 1, 1e6);
  r.read(n, path, "deadline_s", t.deadline_s, 1e-3);
  if (const YAML::Node p = n["patience"]) {
    const auto pp = Reader::join(path, "patience");
    if (r.map(p, pp, {"share", "after_s"})) {
      r.read(p, pp, "share", t.patience.share, 0, 1);
      r.read(p, pp, "after_s", t.patience.after_s);
    }
  }
  if (const YAML::Node p = n["prefix"]) {
    const auto pp = Reader::join(path, "prefix");
    if (r.map(p, pp, {"count", "tokens", "share"})) {
      t.prefix_count = 1;
      t.prefix_share = 1;
      r.read(p, pp, "count", t.prefix_count, 1, 1e6);
      r.read(p, pp, "tokens", t.prefix_tokens, 0, 1e6);
      r.read(p, pp, "share", t.prefix_share, 0, 1);
    }
  }
  r.read(n, path, "developers", t.developers, 1, 1e7);
  read_length(r, n, path, "keystrokes", t.keystrokes);
  read_length(r, n, path, "keystroke_gap_ms", t.keystroke_gap_ms);
  read_length(r, n, path, "file_tokens", t.file_tokens);
  r.read(n, path, "rhythm_spread", t.rhythm_spread, 0, 3);
  r.read(n, path, "client_debounce_ms", t.client_debounce_ms, 0, 60'000);
  r.read(n, path, "type_along", t.type_along, 0, 1);
  read_length(r, n, path, "turns", t.turns);
  read_length(r, n, path, "think_s", t.think_s);
  r.read(n, path, "max_context", t.max_context, 1, 1e7);
  r.read(n, path, "jobs", t.jobs, 0, 1e8);
}

// The gateway's class keys (yaml/setting_keys.hpp), but the SLO targets,
// which the scenario's `slo` sets.
void read_scheduler(Reader& r, const YAML::Node& n, const std::string& path,
                    sched::ClassPolicy& p) {
  std::vector<std::string_view> known = key_names(class_policy_keys());
  std::erase(known, "ttft_slo_ms");
  std::erase(known, "tpot_slo_ms");
  if (r.map(n, path, known)) read_class_policy(r, n, path, p);
}

void read_class(Reader& r, const YAML::Node& n, const std::string& path, const Scenario& s,
                ClassSpec& c) {
  if (!r.map(n, path, {"name", "scheduler", "scheduler_class", "slo", "tenants", "traffic"})) return;
  r.read(n, path, "name", c.name);
  if (c.name.empty()) r.error(Reader::join(path, "name"), "is required");
  for (const ClassSpec& other : s.classes) {
    if (other.name == c.name) r.error(Reader::join(path, "name"), "is used twice");
  }
  c.policy.name = c.name;
  for (const ClassConfig& d : default_classes()) {
    if (d.name == c.name) c.policy = d.policy;
  }
  r.read(n, path, "scheduler_class", c.scheduler_class);
  if (!c.scheduler_class.empty()) {
    // A stream of an earlier class: scheduled as that class, with its policy.
    const auto it = std::find_if(s.classes.begin(), s.classes.end(), [&](const ClassSpec& o) {
      return o.scheduler_class.empty() && o.name == c.scheduler_class;
    });
    if (it == s.classes.end()) {
      r.error(Reader::join(path, "scheduler_class"), "names no earlier class of its own");
    } else {
      c.policy = it->policy;
    }
    if (n["scheduler"]) r.error(Reader::join(path, "scheduler"), "is the class's: set it there");
  } else if (const YAML::Node p = n["scheduler"]) {
    read_scheduler(r, p, Reader::join(path, "scheduler"), c.policy);
  }
  if (const YAML::Node slo = n["slo"]) {
    const auto p = Reader::join(path, "slo");
    if (r.map(slo, p, {"ttft_ms", "tpot_ms", "e2e_ms"})) {
      r.read(slo, p, "ttft_ms", c.slo.ttft_ms);
      r.read(slo, p, "tpot_ms", c.slo.tpot_ms);
      r.read(slo, p, "e2e_ms", c.slo.e2e_ms);
    }
    // The scenario's SLO is what its users would declare to the gateway.
    if (c.scheduler_class.empty() && c.slo.ttft_ms) {
      c.policy.ttft_slo = std::chrono::duration_cast<sched::Duration>(
          std::chrono::duration<double, std::milli>(*c.slo.ttft_ms));
    }
  }
  c.tenant_mix.assign(s.tenants.size(), 0);
  if (const YAML::Node mix = n["tenants"]) {
    const auto p = Reader::join(path, "tenants");
    if (!mix.IsMap()) {
      r.error(p, "must be a mapping of tenant name to traffic weight");
    } else {
      for (const auto& kv : mix) {
        const auto name = kv.first.as<std::string>();
        auto it = std::find_if(s.tenants.begin(), s.tenants.end(),
                               [&](const TenantSpec& t) { return t.name == name; });
        if (it == s.tenants.end()) {
          r.error(Reader::join(p, name), "no such tenant");
          continue;
        }
        r.read(mix, p, name.c_str(), c.tenant_mix[it - s.tenants.begin()], 0, 1e9);
      }
    }
  } else {
    std::fill(c.tenant_mix.begin(), c.tenant_mix.end(), 1.0);
  }
  if (std::all_of(c.tenant_mix.begin(), c.tenant_mix.end(), [](double w) { return w == 0; })) {
    r.error(Reader::join(path, "tenants"), "needs a tenant with a weight above 0");
  }
  if (const YAML::Node t = n["traffic"]) {
    read_traffic(r, t, Reader::join(path, "traffic"), c.traffic);
  } else {
    r.error(Reader::join(path, "traffic"), "is required");
  }
}

void read_engine(Reader& r, const YAML::Node& n, Scenario& s) {
  const std::string path = "engine";
  if (!r.map(n, path,
             {"profile", "count", "max_concurrency", "scrape_ms", "max_waiting", "kv_threshold",
              "signals", "max_num_seqs", "num_blocks", "max_num_batched_tokens", "block_size",
              "priority_scheduling", "prefix_affinity", "adaptive_capacity", "variant", "max_loras",
              "lora_load_ms"})) {
    return;
  }
  EngineSpec& e = s.engine;
  r.read(n, path, "profile", e.profile);
  const engine::Profile* profile = engine::find_profile(e.profile);
  if (profile == nullptr) {
    std::string names;
    for (auto name : engine::profile_names())
      names += (names.empty() ? "" : ", ") + std::string(name);
    r.error(Reader::join(path, "profile"), "unknown profile (known: " + names + ")");
    return;
  }
  e.config = profile->config;
  r.read(n, path, "count", e.count, 1, 100'000);
  r.read(n, path, "max_concurrency", e.max_concurrency, 1, 1e6);
  r.read(n, path, "scrape_ms", e.scrape_ms, 1, 1e6);
  r.read(n, path, "max_waiting", e.max_waiting);
  r.read(n, path, "kv_threshold", e.kv_threshold, 0, 1);
  r.read(n, path, "signals", e.signals);
  r.read(n, path, "max_num_seqs", e.config.max_num_seqs, 1, 1e6);
  r.read(n, path, "num_blocks", e.config.num_blocks, 1, 1e9);
  r.read(n, path, "max_num_batched_tokens", e.config.max_num_batched_tokens, 1, 1e7);
  r.read(n, path, "block_size", e.config.block_size, 1, 1024);
  r.read(n, path, "priority_scheduling", e.priority_scheduling);
  r.read(n, path, "prefix_affinity", e.prefix_affinity);
  r.read(n, path, "max_loras", e.config.max_loras, 1, 1024);
  double load_ms = e.config.lora_load_s * 1000;
  r.read(n, path, "lora_load_ms", load_ms, 0, 1e6);
  e.config.lora_load_s = load_ms / 1000;
  read_section(adaptive_capacity_keys(), r, n["adaptive_capacity"], "engine.adaptive_capacity", e.adaptive);
  if (const char* why = sched::validate(e.adaptive)) r.error("engine.adaptive_capacity", why);
  if (e.priority_scheduling) e.config.policy = engine::SchedulingPolicy::kPriority;
  // variant: {profile: NAME, count: N}: the degraded variant's engines.
  if (const YAML::Node v = n["variant"]; v && r.map(v, "engine.variant", {"profile", "count"})) {
    r.read(v, "engine.variant", "profile", e.variant_profile);
    const engine::Profile* variant = engine::find_profile(e.variant_profile);
    if (variant == nullptr) {
      r.error("engine.variant.profile", "unknown profile '" + e.variant_profile + "'");
    } else {
      e.variant_config = variant->config;
      if (e.priority_scheduling) e.variant_config.policy = engine::SchedulingPolicy::kPriority;
    }
    e.variant_count = 1;
    r.read(v, "engine.variant", "count", e.variant_count, 1, 100'000);
  }
}

// pools: [{classes: [completion], engines: 2, lend: false}, {engines: 6}]: engines add
// up to engine.count, a class is in one pool at most, and a pool without
// classes takes the rest (needed unless every class is named).
void read_pools(Reader& r, const YAML::Node& n, Scenario& s) {
  if (!n.IsSequence() || n.size() == 0) {
    r.error("pools", "must be a non-empty list");
    return;
  }
  const std::vector<std::string> names = scheduler_class_names(s);
  std::set<std::string> named;
  uint32_t engines = 0;
  bool general = false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto path = Reader::index("pools", i);
    if (!r.map(n[i], path, {"classes", "engines", "lend"})) continue;
    PoolGroup g;
    r.read(n[i], path, "engines", g.engines, 1, 1e6);
    r.read(n[i], path, "lend", g.lend);
    if (const YAML::Node c = n[i]["classes"]) {
      for (std::size_t k = 0; c.IsSequence() && k < c.size(); ++k) {
        const auto name = r.scalar(c[k], Reader::index(Reader::join(path, "classes"), k));
        if (!name) continue;
        if (std::find(names.begin(), names.end(), *name) == names.end()) {
          r.error(Reader::join(path, "classes"), "names no class of its own: '" + *name + "'");
        } else if (!named.insert(*name).second) {
          r.error(Reader::join(path, "classes"), "class '" + *name + "' is in two pools");
        }
        g.classes.push_back(*name);
      }
    }
    general = general || g.classes.empty();
    engines += g.engines;
    s.pools.push_back(std::move(g));
  }
  if (engines != s.engine.count) {
    r.error("pools", "engines add up to " + std::to_string(engines) + ", not engine.count (" +
                         std::to_string(s.engine.count) + ")");
  }
  if (!general && named.size() < names.size()) {
    r.error("pools", "some class is in no pool: name it, or add a pool without classes");
  }
}

Scenario read_scenario(Reader& r, const YAML::Node& root) {
  Scenario s;
  s.engine.config = engine::find_profile(s.engine.profile)->config;
  s.engine.max_concurrency = BackendConfig{}.max_concurrency;
  if (!r.map(root, "",
             {"name", "finding", "seed", "duration_s", "max_requests", "drain_s", "engine",
              "direct_routing", "policies", "scheduler", "tenants", "classes", "phases", "gateways",
              "pools", "degradation", "lora"})) {
    return s;
  }
  r.read(root, "", "name", s.name);
  if (s.name.empty()) r.error("name", "is required");
  r.read(root, "", "finding", s.finding);
  r.read(root, "", "seed", s.seed);
  r.read(root, "", "duration_s", s.duration_s, 1e-3, 1e8);
  r.read(root, "", "max_requests", s.max_requests);
  r.read(root, "", "drain_s", s.drain_s, 0, 1e8);
  r.read(root, "", "gateways", s.gateways, 1, 64);
  if (const YAML::Node e = root["engine"]) read_engine(r, e, s);
  // lora: {adapters: 8, skew: 1, share: 1, replicas: 0}
  if (const YAML::Node l = root["lora"]; l && r.map(l, "lora", {"adapters", "skew", "share", "replicas"})) {
    r.read(l, "lora", "adapters", s.lora.adapters, 1, 60'000);
    r.read(l, "lora", "skew", s.lora.skew, 0, 10);
    r.read(l, "lora", "share", s.lora.share, 0, 1);
    r.read(l, "lora", "replicas", s.lora.replicas, 0, 100'000);
  }
  std::string routing = "least_loaded";
  r.read(root, "", "direct_routing", routing);
  if (routing == "round_robin")
    s.direct_routing = DirectRouting::kRoundRobin;
  else if (routing != "least_loaded")
    r.error("direct_routing", "must be least_loaded or round_robin");
  if (const YAML::Node p = root["policies"]) {
    s.policies.clear();
    if (!p.IsSequence()) r.error("policies", "must be a list");
    for (std::size_t i = 0; p.IsSequence() && i < p.size(); ++i) {
      auto v = r.scalar(p[i], Reader::index("policies", i));
      if (v && !is_policy_name(*v)) {
        r.error(Reader::index("policies", i),
                "must be direct, fifo, priority, hybrid, hybrid-no-preemption, hybrid-no-affinity, "
                "hybrid-no-borrowing, hybrid-no-debounce, hybrid-no-degradation or hybrid-no-lora-affinity");
      } else if (v) {
        s.policies.push_back(*v);
      }
    }
  }
  // The gateway's scheduler keys, but the policy: the run compares policies.
  // Staged degradation's settings (the gateway's `degradation:` keys).
  read_section(degradation_keys(), r, root["degradation"], "degradation", s.degradation);
  if (auto why = overload::invalid(s.degradation)) r.error("degradation", std::string(*why));
  if (const YAML::Node sch = root["scheduler"]; sch && r.map(sch, "scheduler", key_names(scheduler_keys(), {"policy"}))) {
    read_settings(scheduler_keys(), r, sch, "scheduler", s.scheduler);
  }
  if (const YAML::Node t = root["tenants"]) {
    if (!t.IsSequence()) r.error("tenants", "must be a list");
    for (std::size_t i = 0; t.IsSequence() && i < t.size(); ++i) {
      const auto p = Reader::index("tenants", i);
      if (!r.map(t[i], p, {"name", "weight", "max_running", "max_share"})) continue;
      TenantSpec tenant;
      r.read(t[i], p, "name", tenant.name);
      if (tenant.name.empty()) r.error(Reader::join(p, "name"), "is required");
      r.read(t[i], p, "weight", tenant.weight, 1e-6, 1e6);
      r.read(t[i], p, "max_running", tenant.max_running, 0u, 100'000u);
      r.read(t[i], p, "max_share", tenant.max_share, 0.0, 1.0);
      s.tenants.push_back(tenant);
    }
  }
  if (s.tenants.empty()) s.tenants.push_back({.name = "default", .weight = 1});
  if (const YAML::Node ph = root["phases"]) {
    if (!ph.IsSequence()) r.error("phases", "must be a list");
    for (std::size_t i = 0; ph.IsSequence() && i < ph.size(); ++i) {
      const auto p = Reader::index("phases", i);
      if (!r.map(ph[i], p, {"name", "from_s", "to_s"})) continue;
      PhaseSpec phase;
      r.read(ph[i], p, "name", phase.name);
      if (phase.name.empty()) r.error(Reader::join(p, "name"), "is required");
      r.read(ph[i], p, "from_s", phase.from_s, 0, 1e8);
      r.read(ph[i], p, "to_s", phase.to_s, 0, 1e8);
      if (!(phase.to_s > phase.from_s)) r.error(Reader::join(p, "to_s"), "must be after from_s");
      s.phases.push_back(phase);
    }
  }
  if (const YAML::Node c = root["classes"]; c && c.IsSequence() && c.size() > 0) {
    for (std::size_t i = 0; i < c.size(); ++i) {
      ClassSpec klass;
      read_class(r, c[i], Reader::index("classes", i), s, klass);
      s.classes.push_back(std::move(klass));
    }
    // The per-token target its users would declare to the gateway: what its
    // SLO asks of the gaps between tokens (the tightest of its streams').
    const std::vector<double> bounds = class_gap_bounds_s(s);
    const std::vector<uint16_t> klass = scheduler_classes(s);
    for (std::size_t i = 0; i < s.classes.size(); ++i) {
      s.classes[i].policy.tpot_slo =
          std::chrono::duration_cast<sched::Duration>(std::chrono::duration<double>(bounds[klass[i]]));
    }
  } else {
    r.error("classes", "must be a non-empty list");
  }
  if (const YAML::Node p = root["pools"]) read_pools(r, p, s);
  return s;
}

}  // namespace

std::expected<Scenario, std::string> parse_scenario(std::string_view yaml) {
  Reader r;
  Scenario s;
  try {
    s = read_scenario(r, YAML::Load(std::string(yaml)));
  } catch (const YAML::Exception& e) {
    return std::unexpected("invalid YAML: " + std::string(e.what()));
  }
  if (r.errors.empty()) {
    sched::SchedulerConfig check;
    for (const ClassSpec& c : s.classes) {
      if (c.scheduler_class.empty()) check.classes.push_back(c.policy);
    }
    check.pools.push_back(
        {.name = "model", .max_concurrency = {s.engine.max_concurrency}, .prefill_tokens_per_s = {}});
    if (auto err = sched::validate(check)) r.error("classes", *err);
  }
  if (!r.errors.empty()) {
    std::string out;
    for (const auto& e : r.errors) out += (out.empty() ? "" : "\n") + e;
    return std::unexpected(out);
  }
  return s;
}

std::expected<Scenario, std::string> load_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::unexpected(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  auto s = parse_scenario(text.str());
  if (!s) return std::unexpected(path + ":\n" + s.error());
  return s;
}

}  // namespace arbiter::bench
