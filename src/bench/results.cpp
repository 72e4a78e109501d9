#include "bench/results.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace arbiter::bench {

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kCompleted:
      return "completed";
    case Outcome::kRejected:
      return "rejected";
    case Outcome::kDropped:
      return "dropped";
    case Outcome::kSuperseded:
      return "superseded";
    case Outcome::kCancelled:
      return "cancelled";
    case Outcome::kUnfinished:
      return "unfinished";
  }
  return "?";
}

Collector::Collector(const Scenario& scenario)
    : scenario_(scenario),
      classes_(scenario.classes.size()),
      tenants_(scenario.tenants.size()),
      phases_(scenario.phases.size(), std::vector<Group>(scenario.classes.size())),
      cells_(scenario.classes.size() * scenario.tenants.size()) {}

void Collector::record(const RequestRecord& r) {
  ++recorded_;
  bool good = false, on_time = false;
  if (r.outcome == Outcome::kCompleted) {
    on_time = r.finished <= r.deadline;
    const SloSpec& slo = scenario_.classes[r.klass].slo;
    const double ttft = (r.first_token - r.arrival) * 1e3;
    const double e2e = (r.finished - r.arrival) * 1e3;
    const double tpot = r.output_tokens > 1 ? (e2e - ttft) / (r.output_tokens - 1) : 0;
    good = on_time && (!slo.ttft_ms || ttft <= *slo.ttft_ms) &&
           (!slo.tpot_ms || tpot <= *slo.tpot_ms) && (!slo.e2e_ms || e2e <= *slo.e2e_ms);
  }
  // A cut answer or the variant's is not completed as if whole (issue 43): counted apart.
  const bool good_degraded = good && (r.degraded == Degraded::kCapped || r.degraded == Degraded::kVariant);
  good = good && !good_degraded;
  for (Group* g : {&classes_[r.klass], &tenants_[r.tenant]}) {
    add(*g, r, good, on_time);
    g->capped += r.degraded == Degraded::kCapped;
    g->variant += r.degraded == Degraded::kVariant;
    g->good_degraded += good_degraded;
    g->shed += r.degraded == Degraded::kShed;
  }
  Cell& cell = cells_[std::size_t{r.klass} * tenants_.size() + r.tenant];
  ++cell.generated;
  ++cell.outcomes[static_cast<std::size_t>(r.outcome)];
  cell.good += good;
  if (r.outcome == Outcome::kCompleted) cell.ttft.push_back(static_cast<float>((r.first_token - r.arrival) * 1e3));
  for (std::size_t p = 0; p < scenario_.phases.size(); ++p) {
    const PhaseSpec& phase = scenario_.phases[p];
    if (r.arrival >= phase.from_s && r.arrival < phase.to_s) add(phases_[p][r.klass], r, good, on_time);
  }
}

void Collector::add(Group& g, const RequestRecord& r, bool good, bool on_time) {
  ++g.generated;
  ++g.outcomes[static_cast<std::size_t>(r.outcome)];
  if (r.deadline != kNever) {
    ++g.with_deadline;
    if (on_time) ++g.met_deadline;
  }
  if (good) ++g.good;
  if (r.outcome != Outcome::kCompleted) return;
  const double ttft = (r.first_token - r.arrival) * 1e3;
  const double e2e = (r.finished - r.arrival) * 1e3;
  g.ttft.push_back(static_cast<float>(ttft));
  g.e2e.push_back(static_cast<float>(e2e));
  if (r.output_tokens > 1)
    g.tpot.push_back(static_cast<float>((e2e - ttft) / (r.output_tokens - 1)));
}

GroupSummary Collector::finish(std::string name, Group& g, double duration_s) {
  GroupSummary s;
  s.name = std::move(name);
  s.generated = g.generated;
  s.outcomes = g.outcomes;
  // The CDF first: percentiles() reorders the samples, the sort serves both.
  std::sort(g.ttft.begin(), g.ttft.end());
  if (!g.ttft.empty()) {
    for (int i = 0; i <= 200; ++i) {
      const auto at = static_cast<std::size_t>(i / 200.0 * static_cast<double>(g.ttft.size() - 1));
      s.ttft_cdf_ms.push_back(g.ttft[at]);
    }
  }
  // Nearest rank among the answered requests; the failed ones rank last.
  const uint64_t answered = g.generated - g.outcomes[static_cast<std::size_t>(Outcome::kSuperseded)];
  const auto rank = static_cast<uint64_t>(std::ceil(0.99 * static_cast<double>(answered)));
  s.ttft_p99_failed_ms = answered == 0            ? std::numeric_limits<double>::quiet_NaN()
                         : rank <= g.ttft.size() ? g.ttft[rank - 1]
                                                 : std::numeric_limits<double>::infinity();
  s.ttft_ms = percentiles(g.ttft);
  s.e2e_ms = percentiles(g.e2e);
  s.tpot_ms = percentiles(g.tpot);
  s.itl_ms = g.itl.percentiles();
  for (double* v : {&s.itl_ms.p50, &s.itl_ms.p90, &s.itl_ms.p99, &s.itl_ms.p999}) *v *= 1e3;
  s.with_deadline = g.with_deadline;
  s.met_deadline = g.met_deadline;
  s.good = g.good;
  s.capped = g.capped;
  s.variant = g.variant;
  s.good_degraded = g.good_degraded;
  s.shed = g.shed;
  s.goodput_rps = duration_s > 0 ? static_cast<double>(g.good) / duration_s : 0;
  const uint64_t judged = g.generated - g.outcomes[static_cast<std::size_t>(Outcome::kSuperseded)];
  s.good_share = judged > 0 ? static_cast<double>(g.good) / static_cast<double>(judged) : 0;
  g = Group{};
  return s;
}

void Collector::merge_into(Group& all, const Group& g) {
  all.generated += g.generated;
  for (std::size_t o = 0; o < kOutcomes; ++o) all.outcomes[o] += g.outcomes[o];
  all.ttft.insert(all.ttft.end(), g.ttft.begin(), g.ttft.end());
  all.tpot.insert(all.tpot.end(), g.tpot.begin(), g.tpot.end());
  all.e2e.insert(all.e2e.end(), g.e2e.begin(), g.e2e.end());
  all.itl.merge(g.itl);
  all.with_deadline += g.with_deadline;
  all.met_deadline += g.met_deadline;
  all.good += g.good;
  all.capped += g.capped;
  all.variant += g.variant;
  all.good_degraded += g.good_degraded;
  all.shed += g.shed;
}

void Collector::merge_into(Group& all, const Cell& c) {
  all.generated += c.generated;
  for (std::size_t o = 0; o < kOutcomes; ++o) all.outcomes[o] += c.outcomes[o];
  all.ttft.insert(all.ttft.end(), c.ttft.begin(), c.ttft.end());
  all.good += c.good;
}

void Collector::summarize_flooding(PolicySummary& out) {
  const std::size_t tenants = tenants_.size();
  const std::vector<uint16_t> sched = scheduler_classes(scenario_);
  const std::vector<std::string> sched_names = scheduler_class_names(scenario_);
  const auto cell = [&](std::size_t c, std::size_t t) -> const Cell& { return cells_[c * tenants + t]; };
  const auto answered = [](const Cell& c) {
    return c.generated - c.outcomes[static_cast<std::size_t>(Outcome::kSuperseded)];
  };
  // flooding[k * tenants + t]: tenant t floods scheduler class k.
  std::vector<bool> flooding(sched_names.size() * tenants, false);
  for (std::size_t k = 0; k < sched_names.size(); ++k) {
    std::vector<uint64_t> sent(tenants, 0), done(tenants, 0), asked(tenants, 0);
    for (std::size_t c = 0; c < sched.size(); ++c) {
      if (sched[c] != k) continue;
      for (std::size_t t = 0; t < tenants; ++t) {
        sent[t] += cell(c, t).generated;
        asked[t] += answered(cell(c, t));
        done[t] += cell(c, t).outcomes[static_cast<std::size_t>(Outcome::kCompleted)];
      }
    }
    double weights = 0, requests = 0, completed = 0, all_asked = 0;
    for (std::size_t t = 0; t < tenants; ++t) {
      if (sent[t] == 0) continue;
      weights += scenario_.tenants[t].weight;
      requests += static_cast<double>(sent[t]);
      completed += static_cast<double>(done[t]);
      all_asked += static_cast<double>(asked[t]);
    }
    for (std::size_t t = 0; t < tenants; ++t) {
      if (sent[t] == 0) continue;
      const double weight_share = scenario_.tenants[t].weight / weights;
      const double demand_share = static_cast<double>(sent[t]) / requests;
      if (demand_share <= kFloodFactor * weight_share) continue;
      flooding[k * tenants + t] = true;
      out.flooders.push_back({.klass = sched_names[k],
                              .tenant = scenario_.tenants[t].name,
                              .weight_share = weight_share,
                              .demand_share = demand_share,
                              .answered = asked[t],
                              .completed = done[t],
                              .others_answered = static_cast<uint64_t>(all_asked) - asked[t],
                              .class_completed = static_cast<uint64_t>(completed)});
    }
  }
  if (out.flooders.empty()) {
    cells_.clear();
    out.fair_classes = out.classes;
    out.fair_all = out.all;
    return;
  }
  Group all;
  for (std::size_t c = 0; c < sched.size(); ++c) {
    Group row;
    for (std::size_t t = 0; t < tenants; ++t) {
      if (!flooding[sched[c] * tenants + t]) merge_into(row, cell(c, t));
    }
    merge_into(all, row);
    out.fair_classes.push_back(finish(scenario_.classes[c].name, row, scenario_.duration_s));
  }
  out.fair_all = finish("all", all, scenario_.duration_s);
  cells_.clear();
}

PolicySummary Collector::summarize(std::string policy, const EngineTotals& engine) {
  PolicySummary out;
  out.policy = std::move(policy);
  out.engine = engine;
  Group all;
  for (std::size_t c = 0; c < classes_.size(); ++c) {
    merge_into(all, classes_[c]);
    out.classes.push_back(finish(scenario_.classes[c].name, classes_[c], scenario_.duration_s));
  }
  out.all = finish("all", all, scenario_.duration_s);
  for (std::size_t p = 0; p < phases_.size(); ++p) {
    const PhaseSpec& spec = scenario_.phases[p];
    PhaseSummary phase{.name = spec.name, .from_s = spec.from_s, .to_s = spec.to_s, .all = {}, .classes = {}};
    Group phase_all;
    for (std::size_t c = 0; c < classes_.size(); ++c) {
      merge_into(phase_all, phases_[p][c]);
      phase.classes.push_back(finish(scenario_.classes[c].name, phases_[p][c], spec.to_s - spec.from_s));
    }
    phase.all = finish("all", phase_all, spec.to_s - spec.from_s);
    out.phases.push_back(std::move(phase));
  }
  std::vector<double> shares, per_weight;
  for (std::size_t t = 0; t < tenants_.size(); ++t) {
    out.tenants.push_back(finish(scenario_.tenants[t].name, tenants_[t], scenario_.duration_s));
    if (out.tenants.back().generated == 0) continue;
    shares.push_back(out.tenants.back().good_share);
    per_weight.push_back(out.tenants.back().goodput_rps / scenario_.tenants[t].weight);
  }
  summarize_flooding(out);
  out.jain = jain_index(shares);
  out.jain_goodput = jain_index(per_weight);
  const double capacity = engine.duration_s * engine.engines;
  out.utilisation = capacity > 0 ? engine.busy_s / capacity : 0;
  out.token_load = capacity > 0 && engine.token_rate > 0
                       ? static_cast<double>(engine.work_tokens) / (capacity * engine.token_rate)
                       : 0;
  const uint64_t wasted = engine.wasted_cancel_tokens - std::min(engine.reused_cancel_tokens, engine.wasted_cancel_tokens);
  out.waste_share = engine.work_tokens > 0
                        ? static_cast<double>(wasted) / static_cast<double>(engine.work_tokens)
                        : 0;
  return out;
}

}  // namespace arbiter::bench
