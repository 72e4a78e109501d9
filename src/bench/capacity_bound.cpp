#include "bench/capacity_bound.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "bench/workload.hpp"

namespace arbiter::bench {

namespace {

// How many of `costs` fit in `capacity`, cheapest first (sorts `costs`).
std::size_t fitting(std::vector<double>& costs, double capacity) {
  std::sort(costs.begin(), costs.end());
  double used = 0;
  std::size_t n = 0;
  for (const double c : costs) {
    used += c;
    if (used > capacity) break;
    ++n;
  }
  return n;
}

// The two windows and engine times that `spec` being good asks for at least
// (capacity_bound.hpp, "Goodput"): all of it, and its prefill; `end`: its
// patience, deadline or the cut.
std::pair<BoundRequest, BoundRequest> good_windows(const RequestSpec& spec, const SloSpec& slo, double end,
                                                   const engine::EngineConfig& config) {
  const double t0 = spec.arrival;
  double all_end = end;
  if (slo.e2e_ms) all_end = std::min(all_end, t0 + *slo.e2e_ms / 1e3);
  if (slo.ttft_ms && slo.tpot_ms) {
    all_end = std::min(all_end, t0 + (*slo.ttft_ms + *slo.tpot_ms * (spec.output_tokens - 1.0)) / 1e3);
  }
  const double first_end = slo.ttft_ms ? std::min(all_end, t0 + *slo.ttft_ms / 1e3) : all_end;
  return {{.arrival = t0, .end = all_end, .cost_s = capacity_cost(spec, spec.output_tokens, config.cost, config.max_num_seqs)},
          {.arrival = t0, .end = first_end, .cost_s = capacity_cost(spec, 1, config.cost, config.max_num_seqs)}};
}

}  // namespace

uint64_t min_failures(std::span<const BoundRequest> requests, double engines, double step_s, double max_len_s) {
  std::vector<BoundRequest> windowed;
  uint64_t empty = 0;
  double last = 0;
  for (const BoundRequest& r : requests) {
    if (r.end <= r.arrival) {
      ++empty;
      continue;
    }
    windowed.push_back(r);
    last = std::max(last, r.end);
  }
  std::sort(windowed.begin(), windowed.end(),
            [](const BoundRequest& a, const BoundRequest& b) { return a.arrival < b.arrival; });
  const auto points = static_cast<std::size_t>(std::ceil(last / step_s)) + 1;
  const auto reach = std::max<std::size_t>(1, static_cast<std::size_t>(max_len_s / step_s));
  // best[k]: the most failures forced by disjoint intervals within [0, k step_s].
  std::vector<uint64_t> best(points, 0);
  std::vector<double> costs;
  for (std::size_t k = 1; k < points; ++k) {
    best[k] = best[k - 1];
    const double e = static_cast<double>(k) * step_s;
    for (std::size_t j = k > reach ? k - reach : 0; j < k; ++j) {
      const double a = static_cast<double>(j) * step_s;
      costs.clear();
      auto it = std::lower_bound(windowed.begin(), windowed.end(), a,
                                 [](const BoundRequest& r, double t) { return r.arrival < t; });
      for (; it != windowed.end() && it->arrival < e; ++it) {
        if (it->end <= e) costs.push_back(it->cost_s);
      }
      if (costs.empty()) continue;
      const uint64_t short_of = costs.size() - fitting(costs, engines * (e - a));
      best[k] = std::max(best[k], best[j] + short_of);
    }
  }
  return empty + best.back();
}

double capacity_cost(const RequestSpec& spec, uint32_t output_tokens, const engine::CostModel& cost,
                     uint32_t max_seqs) {
  // Prefill: the request's own tokens, unless another request could have
  // put them in the cache (typing along, keyed own tokens); shared
  // prefixes and a session's history count as cached.
  const bool own_cached = spec.extends != 0 || spec.own_key != 0;
  const double prefill = own_cached ? 0 : cost.prefill_token_s * spec.unique_tokens;
  // The first token comes with the prefill step; each later one is a
  // decode over a context of the prompt and the tokens before it.
  const double decodes = output_tokens > 0 ? output_tokens - 1.0 : 0.0;
  const double prompt = spec.prompt_tokens();
  const double context = decodes * prompt + decodes * (decodes + 1) / 2;
  return prefill + decodes * (cost.decode_seq_s + cost.base_s / std::max<uint32_t>(1, max_seqs)) +
         cost.context_token_s * context;
}

FailureBound failure_bound(const Scenario& scenario, uint64_t seed, double step_s, double max_len_s) {
  std::vector<RequestSpec> specs;
  Workload workload(scenario, seed);
  while (auto spec = workload.next()) specs.push_back(*spec);
  FailureBound out;
  out.generated = specs.size();
  // The next request with the same supersede key, by arrival.
  std::vector<double> successor(specs.size(), kNever);
  std::unordered_map<uint64_t, std::size_t> latest;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].supersede_key == 0) continue;
    const auto [at, fresh] = latest.try_emplace(specs[i].supersede_key, i);
    if (!fresh) {
      successor[at->second] = specs[i].arrival;
      at->second = i;
    }
  }
  const EngineSpec& engine = scenario.engine;
  const double run_end = scenario.duration_s + scenario.drain_s;
  auto cheapest = [&](const RequestSpec& spec, uint32_t output) {
    double c = capacity_cost(spec, output, engine.config.cost, engine.config.max_num_seqs);
    if (engine.variant_count > 0) {
      c = std::min(c, capacity_cost(spec, output, engine.variant_config.cost, engine.variant_config.max_num_seqs));
    }
    return c;
  };
  // One step a token, each at least the step's fixed cost: the soonest a
  // request can end, alone on the fastest engine.
  double fastest_step = engine.config.cost.base_s;
  if (engine.variant_count > 0) fastest_step = std::min(fastest_step, engine.variant_config.cost.base_s);
  std::vector<BoundRequest> whole, cut, good_all, good_first;
  uint64_t maybe_good = 0;  // requests that could end good: not superseded on the model's own engines
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const RequestSpec& spec = specs[i];
    if (successor[i] != kNever) {
      if (successor[i] < spec.arrival + spec.output_tokens * fastest_step) ++out.superseded;
      if (successor[i] < spec.arrival + fastest_step) ++out.superseded_cut;
      if (successor[i] >= spec.arrival + spec.output_tokens * engine.config.cost.base_s) ++maybe_good;
      continue;  // it may be superseded rather than fail, or end good before its successor
    }
    ++maybe_good;
    const double end = std::min(spec.abort_at, run_end);
    whole.push_back({.arrival = spec.arrival, .end = end, .cost_s = cheapest(spec, spec.output_tokens)});
    cut.push_back({.arrival = spec.arrival, .end = end, .cost_s = cheapest(spec, 1)});
    const auto [all, first] = good_windows(spec, scenario.classes[spec.klass].slo, std::min(end, spec.deadline),
                                           engine.config);
    good_all.push_back(all);
    good_first.push_back(first);
  }
  const double engines = engine.total();
  out.failed = min_failures(whole, engines, step_s, max_len_s);
  out.failed_cut = min_failures(cut, engines, step_s, max_len_s);
  // Each of the two is a condition of being good: the larger shortfall holds.
  out.good = maybe_good - std::max(min_failures(good_all, engine.count, step_s, max_len_s),
                                   min_failures(good_first, engine.count, step_s, max_len_s));
  return out;
}

}  // namespace arbiter::bench
