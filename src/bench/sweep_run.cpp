// The sweep's runs and its report (bench/sweep.hpp); the generator is in sweep.cpp.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "bench/scenario_yaml.hpp"
#include "bench/stats.hpp"
#include "bench/sweep.hpp"
#include "bench/virtual_run.hpp"
#include "bench/yardstick.hpp"

namespace arbiter::bench {

namespace {

// Every run of one scenario, and its verdicts.
void judge_case(SweepCase& out, const Scenario& scenario, unsigned seeds) {
  constexpr std::string_view kPolicies[] = {"fifo", "priority", "hybrid", "direct",
                                            kHybridNoAffinity, kHybridNoDebounce, kHybridTieBreak};
  std::vector<std::vector<Check>> main, features, noise;
  std::vector<double> goodput[4], direct_share;
  for (unsigned k = 0; k < seeds; ++k) {
    RunResults results;
    for (const std::string_view policy : kPolicies) {
      results.policies.push_back(run_virtual(scenario, policy, arrival_seed(scenario.seed, k)));
    }
    for (std::size_t p = 0; p < 4; ++p) goodput[p].push_back(results.policies[p].fair_all.goodput_rps);
    direct_share.push_back(results.policies[3].fair_all.good_share);
    main.push_back(judge(scenario, results));
    auto affinity = judge_variant(scenario, results, "hybrid", kHybridNoAffinity, "affinity", true,
                                  [](const ClassSpec&) { return true; });
    auto debounce = judge_variant(scenario, results, "hybrid", kHybridNoDebounce, "debounce", true, debounces);
    affinity.insert(affinity.end(), debounce.begin(), debounce.end());
    features.push_back(std::move(affinity));
    noise.push_back(judge_variant(scenario, results, kHybridTieBreak, "hybrid", "tie-break", false,
                                  [](const ClassSpec&) { return true; }));
    if (k == 0) out.old_regrets = find_regrets(scenario, results);
  }
  out.regrets = combine(main);
  out.features = combine(features);
  out.noise = combine(noise);
  for (std::size_t p = 0; p < 4; ++p) out.goodput[p] = median(goodput[p]);
  out.direct_meets_slo = median(direct_share) >= kDirectMeetsSlo;
}

}  // namespace

std::vector<SweepCase> run_sweep(uint64_t seed, uint32_t first, uint32_t count,
                                 const SweepShape& shape, unsigned jobs, unsigned seeds) {
  std::vector<SweepCase> cases(count);
  std::atomic<uint32_t> next{0};
  auto worker = [&] {
    for (uint32_t i; (i = next++) < count;) {
      SweepCase& out = cases[i];
      out.index = first + i;
      out.yaml = random_scenario_yaml(seed, out.index, shape);
      auto scenario = parse_scenario(out.yaml);
      if (!scenario) {  // a generator bug: report it as a finding, never skip silently
        out.name = "sweep-" + std::to_string(seed) + "-" + std::to_string(out.index);
        out.regrets.push_back({"scenario does not parse: " + scenario.error(), 0, 0});
        continue;
      }
      out.name = scenario->name;
      out.finding = scenario->finding;
      const auto start = std::chrono::steady_clock::now();
      judge_case(out, *scenario, seeds);
      out.cpu_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < std::min<unsigned>(jobs, count); ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  return cases;
}

namespace {

std::string joined(const std::vector<Regret>& regrets) {
  std::string r;
  for (const Regret& g : regrets) r += (r.empty() ? "" : "; ") + describe(g);
  return r.empty() ? "none" : r;
}

std::size_t with_prefix(const std::vector<Regret>& regrets, std::string_view prefix) {
  std::size_t n = 0;
  for (const Regret& g : regrets) n += g.figure.starts_with(prefix);
  return n;
}

}  // namespace

std::string render_sweep_markdown(uint64_t seed, unsigned seeds, const std::vector<SweepCase>& cases,
                                  const std::string& command) {
  std::size_t losing = 0, figures = 0, noisy = 0, old_losing = 0, old_figures = 0;
  std::size_t with_feature[2] = {0, 0}, feature_figures[2] = {0, 0};  // affinity, debounce
  std::size_t direct_cases = 0;
  double worst_ratio = INFINITY, sum_ratio = 0, worst_direct = INFINITY, worst_direct_best = INFINITY, cpu = 0;
  for (const SweepCase& c : cases) {
    losing += !c.regrets.empty();
    figures += c.regrets.size();
    noisy += !c.noise.empty();
    std::size_t old = 0;
    for (const Regret& g : c.old_regrets) old += !(g.figure.starts_with("affinity:") || g.figure.starts_with("debounce:"));
    old_losing += old > 0;
    old_figures += old;
    for (int f = 0; f < 2; ++f) {
      const std::size_t n = with_prefix(c.features, f == 0 ? "affinity:" : "debounce:");
      with_feature[f] += n > 0;
      feature_figures[f] += n;
    }
    const double best = std::max(c.goodput[0], c.goodput[1]);
    const double ratio = best > 0 ? c.goodput[2] / best : 1;
    worst_ratio = std::min(worst_ratio, ratio);
    sum_ratio += ratio;
    if (c.direct_meets_slo) {
      ++direct_cases;
      worst_direct = std::min(worst_direct, c.goodput[3] > 0 ? c.goodput[2] / c.goodput[3] : 1);
      const double best3 = std::max(best, c.goodput[3]);
      worst_direct_best = std::min(worst_direct_best, best3 > 0 ? c.goodput[2] / best3 : 1);
    }
    cpu += c.cpu_s;
  }
  const auto n = static_cast<double>(cases.size());
  std::string out = "# arbiter-bench sweep, seed " + std::to_string(seed) + "\n\nCommand:\n\n    " +
                    command + "\n\n";
  out += std::to_string(cases.size()) + " generated scenarios, " + std::to_string(losing) +
         " where hybrid loses by the yardstick of DECISIONS.md D1-D5 (" + std::to_string(figures) +
         " figures; each scenario run with " + std::to_string(seeds) + " arrival seeds, a figure lost on most of them and on the median). "
         "Noise floor: hybrid-tiebreak (another rendezvous salt, nothing else) loses against hybrid on " +
         std::to_string(noisy) + ". Goodput of hybrid over the better of fifo and priority (flooders "
         "excluded, medians): mean " + sweep_number(cases.empty() ? 1 : sum_ratio / n) + ", worst " +
         sweep_number(cases.empty() ? 1 : worst_ratio) + "; in the " + std::to_string(direct_cases) +
         " scenarios where direct meets its SLOs, worst over direct " +
         sweep_number(direct_cases ? worst_direct : 1) + ", over the best of fifo, priority and direct " +
         sweep_number(direct_cases ? worst_direct_best : 1) + ". " + sweep_number(cpu) + " s of CPU.\n\n";
  out += "The issue-11 yardstick on the first seed alone, for comparison: " + std::to_string(old_losing) +
         " losing scenarios (" + std::to_string(old_figures) + " figures).\n\n";
  out += "Prefix affinity against hybrid without it: " + std::to_string(with_feature[0]) +
         " scenarios where a class's P99 TTFT (D3) is over its bound (1.2x + 20 ms) outside its SLO (" +
         std::to_string(feature_figures[0]) +
         " figures; not counted above). The debounce against hybrid without it (every class's debounce 0): " +
         std::to_string(with_feature[1]) + " scenarios (" + std::to_string(feature_figures[1]) +
         " figures; not counted above).\n\n";
  out += "| scenario | what | direct | fifo | priority | hybrid | losing (D1-D5) | features, noise | issue-11 yardstick |\n"
         "|---|---|---:|---:|---:|---:|---|---|---|\n";
  for (const SweepCase& c : cases) {
    std::vector<Regret> other = c.features;
    other.insert(other.end(), c.noise.begin(), c.noise.end());
    out += "| " + c.name + " | " + c.finding + " | " + sweep_number(c.goodput[3]) + " | " +
           sweep_number(c.goodput[0]) + " | " + sweep_number(c.goodput[1]) + " | " + sweep_number(c.goodput[2]) +
           " | " + joined(c.regrets) + " | " + joined(other) + " | " + joined(c.old_regrets) + " |\n";
  }
  return out;
}

}  // namespace arbiter::bench
