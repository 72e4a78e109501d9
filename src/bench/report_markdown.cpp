#include "bench/report_markdown.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "bench/regret.hpp"

namespace arbiter::bench {
namespace {

std::string fmt(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pct(double share) { return fmt(share * 100, 2) + "%"; }

// Change of `after` against `before` in %; "-" when undefined.
std::string change(double before, double after) {
  if (before == 0 || !std::isfinite(before) || !std::isfinite(after))
    return before == after ? "0%" : "-";
  const double c = (after - before) / std::fabs(before) * 100;
  return (c >= 0 ? "+" : "") + fmt(c, 1) + "%";
}

// Requests the client saw fail: 429, 503 (queue deadline, engine refusal), or its own time-out.
double lost_share(const GroupSummary& g) {
  if (g.generated == 0) return 0;
  const double lost =
      static_cast<double>(g.outcomes[static_cast<std::size_t>(Outcome::kRejected)] +
                          g.outcomes[static_cast<std::size_t>(Outcome::kDropped)] +
                          g.outcomes[static_cast<std::size_t>(Outcome::kCancelled)]);
  return lost / static_cast<double>(g.generated);
}

// part / whole, NaN (shown as "unknown") without a whole.
double share_of(uint64_t part, uint64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : NAN;
}

double deadline_rate(const GroupSummary& g) {
  return g.with_deadline
             ? static_cast<double>(g.met_deadline) / static_cast<double>(g.with_deadline)
             : 1;
}

// Some typing traffic types along its suggestions (TrafficSpec::type_along).
bool types_along(const Scenario& scenario) {
  return std::any_of(scenario.classes.begin(), scenario.classes.end(),
                     [](const ClassSpec& c) { return c.traffic.type_along > 0; });
}

struct Row {
  std::string label;
  std::function<double(const PolicySummary&)> value;
  std::function<std::string(double)> show;
};

}  // namespace

// Staged degradation's part, when a policy degraded or
// staged anything: per class the answers cut by a cap (never counted as
// goodput; those otherwise within SLO as degraded goodput) and the requests
// shed, and the time in each stage.
void render_degradation(const RunResults& results, std::string& out) {
  const auto degraded = [](const PolicySummary& p) {
    return p.degrade_transitions > 0 || p.all.capped > 0 || p.all.variant > 0 || p.all.shed > 0;
  };
  if (std::none_of(results.policies.begin(), results.policies.end(), degraded)) return;
  out += "\n## Degradation\n\nAnswers cut by a cap or given by the degraded variant are not goodput; those "
         "otherwise within their SLO are counted as degraded goodput. Shed requests are among the rejected.\n\n"
         "| policy | class | capped (cut) | variant | degraded within SLO, req/s | shed | shed share |\n"
         "|---|---|---:|---:|---:|---:|---:|\n";
  for (const PolicySummary& p : results.policies) {
    if (!degraded(p)) continue;
    const double window = p.all.good > 0 && p.all.goodput_rps > 0 ? p.all.good / p.all.goodput_rps : 0;
    std::vector<const GroupSummary*> rows{&p.all};
    for (const GroupSummary& g : p.classes) rows.push_back(&g);
    for (const GroupSummary* g : rows) {
      out += "| " + p.policy + " | " + (g == &p.all ? std::string("all") : g->name) + " | " +
             std::to_string(g->capped) + " | " + std::to_string(g->variant) + " | " +
             fmt(window > 0 ? static_cast<double>(g->good_degraded) / window : 0, 2) + " | " + std::to_string(g->shed) +
             " | " + pct(share_of(g->shed, g->generated)) + " |\n";
    }
    double total = 0;
    for (const double s : p.stage_seconds) total += s;
    out += "\n`" + p.policy + "`: " + std::to_string(p.degrade_transitions) + " stage changes; time in stage";
    const char* names[] = {"normal", "elevated", "high", "shedding"};
    for (std::size_t s = 0; s < 4; ++s) out += std::string(s ? ", " : " ") + names[s] + " " + pct(total > 0 ? p.stage_seconds[s] / total : 0);
    out += " (over replicas and pools).\n\n";
  }
}

std::string render_markdown(const Scenario& scenario, const RunResults& results,
                            const std::vector<PlotFile>& plots) {
  const EngineSpec& e = scenario.engine;
  std::string out = "# arbiter-bench: " + scenario.name + " (" + results.info.mode + " mode)\n\n";
  out += "Finding tested: " + scenario.finding + "\n\n";
  out += "Scenario `" + results.info.scenario_path + "`, seed " +
         std::to_string(results.info.seed) + ", " + std::to_string(e.count) + " x `" + e.profile +
         "` engines (gateway: " + std::to_string(e.max_concurrency) + " slots each), " +
         fmt(scenario.duration_s, 0) + " s of arrivals. Command:\n\n    " + results.info.command +
         "\n\n";
  if (results.info.mode == "live") {
    out += "Live run against `" + results.info.target + "`" +
           (results.info.gateway_config.empty()
                ? std::string()
                : " (gateway config `" + results.info.gateway_config + "`)") +
           ", in real time over HTTP. Engine-side figures (utilisation, wasted work, engine "
           "totals) cannot be observed over HTTP: they are reported as unknown. Latencies count "
           "from each request's scheduled send time; the time series shows requests waiting for "
           "their first token and requests streaming, as the client sees them.\n\n";
    if (!results.info.notes.empty()) {
      out += "Notes:\n\n";
      for (const std::string& n : results.info.notes) out += "- " + n + "\n";
      out += "\n";
    }
  }

  std::vector<Row> rows;
  auto ms = [](double v) { return fmt(v, v < 10 ? 2 : 0); };
  rows.push_back({"requests generated",
                  [](const PolicySummary& p) { return double(p.all.generated); },
                  [](double v) { return fmt(v, 0); }});
  rows.push_back({"goodput, req/s meeting SLOs",
                  [](const PolicySummary& p) { return p.all.goodput_rps; },
                  [](double v) { return fmt(v, 2); }});
  for (std::size_t c = 0; c < scenario.classes.size(); ++c) {
    const std::string& n = scenario.classes[c].name;
    rows.push_back({n + ": TTFT P99, ms",
                    [c](const PolicySummary& p) { return p.classes[c].ttft_ms.p99; }, ms});
    rows.push_back(
        {n + ": E2E P99, ms", [c](const PolicySummary& p) { return p.classes[c].e2e_ms.p99; }, ms});
    if (scenario.classes[c].traffic.deadline_s) {
      rows.push_back({n + ": completed within deadline",
                      [c](const PolicySummary& p) { return deadline_rate(p.classes[c]); }, pct});
    }
    rows.push_back({n + ": failed (429 + 503 + client timeout)",
                    [c](const PolicySummary& p) { return lost_share(p.classes[c]); }, pct});
    rows.push_back({n + ": share meeting SLO",
                    [c](const PolicySummary& p) { return p.classes[c].good_share; }, pct});
  }
  rows.push_back({"engine utilisation", [](const PolicySummary& p) { return p.utilisation; }, pct});
  rows.push_back({"engine token load (tokens / full-step capacity)",
                  [](const PolicySummary& p) { return p.engine_known ? p.token_load : NAN; }, pct});
  rows.push_back({"engine work wasted on cancelled/superseded (net of what a later request reused)",
                  [](const PolicySummary& p) { return p.waste_share; }, pct});
  rows.push_back({"dispatches sent where their prompt's prefix went before",
                  [](const PolicySummary& p) { return share_of(p.engine.prefix_followed, p.engine.prefix_seen); },
                  pct});
  if (scenario.lora.adapters > 0) {
    rows.push_back({"LoRA runs that found their adapter loaded (1 - loads / runs)",
                    [](const PolicySummary& p) {
                      return p.engine.adapter_runs == 0 || !p.engine_known
                                 ? NAN
                                 : 1 - static_cast<double>(std::min(p.engine.lora_loads, p.engine.adapter_runs)) /
                                           static_cast<double>(p.engine.adapter_runs);
                    },
                    pct});
  }
  if (!scenario.pools.empty()) {
    rows.push_back({"dispatches onto another pool's engines (borrowing)",
                    [](const PolicySummary& p) {
                      return share_of(p.engine.borrowed_dispatches, p.engine.dispatches);
                    },
                    pct});
  }
  if (types_along(scenario)) {
    rows.push_back({"running generations a newer keystroke inherited (typing through)",
                    [](const PolicySummary& p) { return static_cast<double>(p.engine.typed_through); },
                    [](double v) { return fmt(v, 0); }});
  }
  rows.push_back({"busiest engine's running requests over the mean (time average)",
                  [](const PolicySummary& p) { return p.engine_known ? p.engine.load_spread : NAN; },
                  [](double v) { return fmt(v, 3); }});
  rows.push_back({"Jain fairness over tenants (SLO share)",
                  [](const PolicySummary& p) { return p.jain; },
                  [](double v) { return fmt(v, 3); }});
  rows.push_back({"Jain fairness over tenants (goodput per weight)",
                  [](const PolicySummary& p) { return p.jain_goodput; },
                  [](double v) { return fmt(v, 3); }});

  const PolicySummary* hybrid = find_policy(results, "hybrid");
  const PolicySummary* priority = find_policy(results, "priority");
  const PolicySummary* fifo = find_policy(results, "fifo");
  out += "## Before / after\n\n| figure |";
  for (const auto& p : results.policies) out += " " + p.policy + " |";
  if (hybrid && priority) out += " hybrid vs priority |";
  if (hybrid && fifo) out += " hybrid vs fifo |";
  out += "\n|---|";
  for (std::size_t i = 0; i < results.policies.size(); ++i) out += "---:|";
  if (hybrid && priority) out += "---:|";
  if (hybrid && fifo) out += "---:|";
  out += "\n";
  for (const Row& row : rows) {
    out += "| " + row.label + " |";
    for (const auto& p : results.policies) {
      const double v = row.value(p);
      out += ' ';
      out += std::isnan(v) ? "unknown" : row.show(v);
      out += " |";
    }
    if (hybrid && priority) out += " " + change(row.value(*priority), row.value(*hybrid)) + " |";
    if (hybrid && fifo) out += " " + change(row.value(*fifo), row.value(*hybrid)) + " |";
    out += "\n";
  }
  out += "\nChange in % of the value (lower is better for latencies, losses and waste).\n";
  if (hybrid) {
    // Baselines are the schemes hybrid replaces, not its own variants.
    const PolicySummary* best = nullptr;
    for (const auto& p : results.policies) {
      if (p.policy.starts_with("hybrid")) continue;
      if (!best || p.all.goodput_rps > best->all.goodput_rps) best = &p;
    }
    if (best) {
      out += "\nGoodput: hybrid " + fmt(hybrid->all.goodput_rps, 2) + " req/s, best baseline `" +
             best->policy + "` " + fmt(best->all.goodput_rps, 2) + " req/s (" +
             change(best->all.goodput_rps, hybrid->all.goodput_rps) + "): hybrid " +
             (hybrid->all.goodput_rps >= best->all.goodput_rps ? "beats" : "does **not** beat") +
             " every baseline on goodput here.\n";
    }
  }
  if (comparable(results)) {
    const auto regrets = find_regrets(scenario, results);
    out += "\nRegret yardstick (docs/arbiter-bench.md): ";
    if (regrets.empty()) {
      out += "hybrid loses on no figure.\n";
    } else {
      out += "hybrid loses on " + std::to_string(regrets.size()) +
             (regrets.size() == 1 ? " figure:\n\n" : " figures:\n\n");
    }
    for (const Regret& r : regrets) out += "- " + describe(r) + "\n";
  }

  if (!scenario.phases.empty()) {
    out += "\n## Per phase\n\nRequests that arrived in the phase; goodput per second of the phase.\n\n"
           "| policy | phase | class | generated | failed (429 + 503 + timeout) | TTFT P50/P99 ms | "
           "goodput req/s |\n|---|---|---|---:|---:|---|---:|\n";
    for (const auto& p : results.policies) {
      for (const PhaseSummary& ph : p.phases) {
        const std::string label = ph.name + " (" + fmt(ph.from_s, 0) + "-" + fmt(ph.to_s, 0) + " s)";
        std::vector<const GroupSummary*> groups{&ph.all};
        for (const GroupSummary& g : ph.classes) groups.push_back(&g);
        for (const GroupSummary* g : groups) {
          out += "| " + p.policy + " | " + label + " | " + g->name + " | " + std::to_string(g->generated) +
                 " | " + pct(lost_share(*g)) + " | " + ms(g->ttft_ms.p50) + " / " + ms(g->ttft_ms.p99) +
                 " | " + fmt(g->goodput_rps, 2) + " |\n";
        }
      }
    }
  }

  render_degradation(results, out);

  for (const char* level : {"classes", "tenants"}) {
    out += std::string("\n## Per ") + (level[0] == 'c' ? "class" : "tenant") + "\n\n| policy | " +
           (level[0] == 'c' ? "class" : "tenant") +
           " | generated | completed | rejected | dropped | superseded | cancelled | unfinished | "
           "TTFT P50/P90/P99/P99.9 ms | ITL P50/P99 ms | E2E P50/P99/P99.9 ms | within deadline | "
           "goodput req/s |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|\n";
    for (const auto& p : results.policies) {
      for (const GroupSummary& g : level[0] == 'c' ? p.classes : p.tenants) {
        out += "| " + p.policy + " | " + g.name + " | " + std::to_string(g.generated);
        for (std::size_t o = 0; o < kOutcomes; ++o) out += " | " + std::to_string(g.outcomes[o]);
        out += " | " + ms(g.ttft_ms.p50) + " / " + ms(g.ttft_ms.p90) + " / " + ms(g.ttft_ms.p99) +
               " / " + ms(g.ttft_ms.p999) + " | " + ms(g.itl_ms.p50) + " / " + ms(g.itl_ms.p99) +
               " | " + ms(g.e2e_ms.p50) + " / " + ms(g.e2e_ms.p99) + " / " + ms(g.e2e_ms.p999) +
               " | " + (g.with_deadline ? pct(deadline_rate(g)) : "-") + " | " +
               fmt(g.goodput_rps, 2) + " |\n";
      }
    }
  }
  out +=
      "\n## Engines\n\n| policy | run length s | utilisation | work tokens | computed for "
      "cancelled/superseded | of it prefill | of it reused later | net waste share | "
      "lost to gateway preemption | of it reused later | gateway preemptions | engine KV preemptions | "
      "Jain | CPU s |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& p : results.policies) {
    const EngineTotals& t = p.engine;
    if (!p.engine_known) {
      out += "| " + p.policy + " | " + fmt(t.duration_s, 1) +
             " | unknown | unknown | unknown | unknown | unknown | unknown | unknown | unknown | unknown "
             "| unknown | " +
             fmt(p.jain, 3) + " | - |\n";
      continue;
    }
    out += "| " + p.policy + " | " + fmt(t.duration_s, 1) + " | " + pct(p.utilisation) + " | " +
           std::to_string(t.work_tokens) + " | " + std::to_string(t.wasted_cancel_tokens) + " | " +
           std::to_string(t.wasted_cancel_prefill) + " | " + std::to_string(t.reused_cancel_tokens) +
           " | " + pct(p.waste_share) + " | " + std::to_string(t.wasted_preempt_tokens) + " | " +
           std::to_string(t.reused_preempt_tokens) + " | " + std::to_string(t.gateway_preemptions) +
           " | " + std::to_string(t.engine_preemptions) + " | " + fmt(p.jain, 3) + " | " +
           fmt(p.wall_s, 2) + " |\n";
  }
  if (!plots.empty()) {
    out += "\n## Plots\n\n";
    for (const PlotFile& plot : plots) out += "![" + plot.title + "](" + plot.file + ")\n";
  }
  return out;
}

}  // namespace arbiter::bench
