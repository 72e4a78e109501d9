#include "bench/report_json.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

namespace arbiter::bench {
namespace json = boost::json;
namespace {

// Unknown figures (NaN: live mode's engine side) as null: JSON has no NaN.
json::value number_or_null(double v) {
  if (std::isnan(v)) return nullptr;
  return v;
}

json::object to_json(const Percentiles& p) {
  return {{"count", p.count}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"p99_9", p.p999}};
}

json::object to_json(const GroupSummary& g) {
  json::object outcomes;
  for (std::size_t o = 0; o < kOutcomes; ++o)
    outcomes[outcome_name(static_cast<Outcome>(o))] = g.outcomes[o];
  const auto rate = [&](Outcome o) {
    return g.generated ? static_cast<double>(g.outcomes[static_cast<std::size_t>(o)]) / g.generated
                       : 0.0;
  };
  json::array cdf;
  for (float v : g.ttft_cdf_ms) cdf.push_back(v);
  return {{"name", g.name},
          {"generated", g.generated},
          {"outcomes", outcomes},
          {"rejected_rate", rate(Outcome::kRejected)},
          {"dropped_rate", rate(Outcome::kDropped)},
          {"ttft_ms", to_json(g.ttft_ms)},
          {"itl_ms", to_json(g.itl_ms)},
          {"tpot_ms", to_json(g.tpot_ms)},
          {"e2e_ms", to_json(g.e2e_ms)},
          {"with_deadline", g.with_deadline},
          {"met_deadline", g.met_deadline},
          {"deadline_rate",
           g.with_deadline ? static_cast<double>(g.met_deadline) / g.with_deadline : 1.0},
          {"good", g.good},
          {"capped", g.capped},
          {"variant", g.variant},
          {"good_degraded", g.good_degraded},
          {"shed", g.shed},
          {"goodput_rps", g.goodput_rps},
          {"good_share", g.good_share},
          {"ttft_cdf_ms", cdf}};
}

json::object to_json(const PolicySummary& p) {
  json::array classes, tenants, series;
  for (const auto& g : p.classes) classes.push_back(to_json(g));
  for (const auto& g : p.tenants) tenants.push_back(to_json(g));
  for (const Sample& s : p.series) {
    series.push_back(json::array{s.t, s.queued, s.running, number_or_null(s.utilisation)});
  }
  json::array phases;
  for (const PhaseSummary& ph : p.phases) {
    json::array phase_classes;
    for (const GroupSummary& g : ph.classes) phase_classes.push_back(to_json(g));
    phases.push_back(json::object{{"name", ph.name},
                                  {"from_s", ph.from_s},
                                  {"to_s", ph.to_s},
                                  {"all", to_json(ph.all)},
                                  {"classes", phase_classes}});
  }
  const EngineTotals& e = p.engine;
  json::value engine = nullptr;  // live mode: not observable over HTTP
  if (p.engine_known) {
    engine = json::object{{"duration_s", e.duration_s},
                          {"busy_s", e.busy_s},
                          {"engines", e.engines},
                          {"work_tokens", e.work_tokens},
                          {"wasted_cancel_tokens", e.wasted_cancel_tokens},
                          {"wasted_cancel_prefill_tokens", e.wasted_cancel_prefill},
                          {"wasted_preempt_tokens", e.wasted_preempt_tokens},
                          {"reused_cancel_tokens", e.reused_cancel_tokens},
                          {"reused_preempt_tokens", e.reused_preempt_tokens},
                          {"prefix_seen", e.prefix_seen},
                          {"prefix_followed", e.prefix_followed},
                          {"adapter_runs", e.adapter_runs},
                          {"lora_loads", e.lora_loads},
                          {"load_spread", e.load_spread},
                          {"engine_preemptions", e.engine_preemptions},
                          {"gateway_preemptions", e.gateway_preemptions},
                          {"dispatches", e.dispatches},
                          {"borrowed_dispatches", e.borrowed_dispatches},
                          {"typed_through", e.typed_through}};
  }
  return {{"policy", p.policy},
          {"all", to_json(p.all)},
          {"classes", classes},
          {"tenants", tenants},
          {"duration_s", e.duration_s},
          {"engine", engine},
          {"utilisation", number_or_null(p.utilisation)},
          {"token_load", number_or_null(p.engine_known ? p.token_load : NAN)},
          {"waste_share", number_or_null(p.waste_share)},
          {"jain", p.jain},
          {"jain_goodput_per_weight", p.jain_goodput},
          {"phases", phases},
          {"wall_s", p.wall_s},
          {"series_columns", json::array{"t", "queued", "running", "utilisation"}},
          {"series", series}};
}

void pretty(std::ostream& out, const json::value& v, int indent) {
  const std::string pad(indent + 2, ' ');
  if (v.is_object() && !v.get_object().empty()) {
    out << "{\n";
    bool first = true;
    for (const auto& kv : v.get_object()) {
      out << (first ? "" : ",\n") << pad << json::serialize(json::string(kv.key())) << ": ";
      pretty(out, kv.value(), indent + 2);
      first = false;
    }
    out << "\n" << std::string(indent, ' ') << "}";
  } else if (v.is_array() && !v.get_array().empty() && (v.get_array()[0].is_object())) {
    out << "[\n";
    bool first = true;
    for (const auto& e : v.get_array()) {
      out << (first ? "" : ",\n") << pad;
      pretty(out, e, indent + 2);
      first = false;
    }
    out << "\n" << std::string(indent, ' ') << "]";
  } else {
    out << json::serialize(v);  // scalars and arrays of numbers on one line
  }
}

// Checks one group's object; `where` prefixes each problem.
void check_group(const json::object& g, const std::string& where,
                 std::vector<std::string>& problems) {
  const uint64_t generated = g.at("generated").to_number<uint64_t>();
  uint64_t sum = 0;
  for (const auto& kv : g.at("outcomes").get_object()) sum += kv.value().to_number<uint64_t>();
  if (sum != generated) {
    problems.push_back(where + ": outcomes add up to " + std::to_string(sum) + ", generated " +
                       std::to_string(generated));
  }
  for (const char* metric : {"ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"}) {
    const auto& p = g.at(metric).get_object();
    const double v[] = {p.at("p50").to_number<double>(), p.at("p90").to_number<double>(),
                        p.at("p99").to_number<double>(), p.at("p99_9").to_number<double>()};
    if (!(v[0] >= 0 && v[0] <= v[1] && v[1] <= v[2] && v[2] <= v[3])) {
      problems.push_back(where + "." + metric + ": percentiles not ordered");
    }
  }
  if (g.at("met_deadline").to_number<uint64_t>() > g.at("with_deadline").to_number<uint64_t>()) {
    problems.push_back(where + ": more deadlines met than requests with one");
  }
  if (g.at("good").to_number<uint64_t>() > g.at("outcomes").at("completed").to_number<uint64_t>()) {
    problems.push_back(where + ": more good requests than completed ones");
  }
}

}  // namespace

bool write_results_json(const std::string& path, const Scenario& scenario,
                        const RunResults& results) {
  json::array policies;
  for (const auto& p : results.policies) policies.push_back(to_json(p));
  const EngineSpec& e = scenario.engine;
  json::object root{{"tool", "arbiter-bench"},
                    {"mode", results.info.mode},
                    {"scenario", scenario.name},
                    {"finding", scenario.finding},
                    {"scenario_file", results.info.scenario_path},
                    {"command", results.info.command},
                    {"seed", results.info.seed},
                    {"engine_profile", e.profile},
                    {"engines", e.count},
                    {"max_concurrency", e.max_concurrency},
                    {"duration_s", scenario.duration_s},
                    {"policies", policies}};
  if (results.info.mode == "live") {
    json::array notes;
    for (const std::string& n : results.info.notes) notes.push_back(json::string(n));
    root["target"] = results.info.target;
    root["gateway_config"] = results.info.gateway_config;
    root["notes"] = std::move(notes);
  }
  std::ofstream out(path);
  pretty(out, root, 0);
  out << "\n";
  return static_cast<bool>(out);
}

std::vector<std::string> check_results_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {path + ": cannot open"};
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> problems;
  try {
    const json::value root = json::parse(text.str());
    const auto& policies = root.at("policies").get_array();
    if (policies.empty()) problems.push_back("no policies");
    for (const auto& pv : policies) {
      const auto& p = pv.get_object();
      const std::string name(p.at("policy").get_string());
      const auto& all = p.at("all").get_object();
      check_group(all, name + ".all", problems);
      for (const char* groups : {"classes", "tenants"}) {
        uint64_t sum = 0;
        for (const auto& g : p.at(groups).get_array()) {
          const auto& go = g.get_object();
          check_group(go, name + "." + groups + "." + std::string(go.at("name").get_string()),
                      problems);
          sum += go.at("generated").to_number<uint64_t>();
        }
        if (sum != all.at("generated").to_number<uint64_t>()) {
          problems.push_back(name + "." + groups + ": generated add up to " + std::to_string(sum) +
                             ", total " +
                             std::to_string(all.at("generated").to_number<uint64_t>()));
        }
      }
      // null: unknown (live mode cannot see the engines).
      if (!p.at("utilisation").is_null()) {
        const double util = p.at("utilisation").to_number<double>();
        if (!(util >= 0 && util <= 1.0001)) problems.push_back(name + ": utilisation out of 0..1");
      }
      const double jain = p.at("jain").to_number<double>();
      if (!(jain > 0 && jain <= 1.0001)) problems.push_back(name + ": Jain index out of (0, 1]");
    }
    // Every policy ran the same workload.
    for (const auto& pv : policies) {
      if (pv.at("all").at("generated") != policies[0].at("all").at("generated")) {
        problems.push_back("policies generated different numbers of requests");
        break;
      }
    }
  } catch (const std::exception& e) {
    problems.push_back(path + ": " + e.what());
  }
  return problems;
}

}  // namespace arbiter::bench
