#include "gateway/stages/rollout/rollout_book.hpp"

#include "core/rollout/traffic_split.hpp"

namespace arbiter {

RolloutBook::RolloutBook(metrics::Registry& registry)
    : weight_(registry.gauge("arbiter_alias_weight",
                             "The share of a model alias's traffic each of its targets takes now, in percent: the "
                             "configured weights, or as the canary's rollback or promotion left them.",
                             {"alias", "target"})),
      verdicts_(registry.counter("arbiter_canary_verdicts_total",
                                 "Canary verdicts by alias: rolled_back (worse than the stable targets beyond the "
                                 "margin; its weight set to 0) or promoted (a step up).",
                                 {"alias", "verdict"})) {}

void RolloutBook::configure(const std::vector<rollout::AliasConfig>& aliases, rollout::TimePoint now) {
  std::lock_guard lock(mu_);
  StringMap<Rollout> next;
  for (const rollout::AliasConfig& alias : aliases) {
    const auto it = rollouts_.find(alias.name);
    if (it != rollouts_.end() && it->second.config == alias) {
      next.emplace(alias.name, std::move(it->second));  // unchanged: its rollout goes on
      continue;
    }
    Rollout r{.config = alias, .judge = std::nullopt, .weights = {}};
    if (alias.canary) {
      r.judge.emplace(alias, now);
    } else {
      for (const rollout::AliasTarget& t : alias.targets) r.weights.push_back(t.weight);
    }
    publish_weights(r);
    next.emplace(alias.name, std::move(r));
  }
  rollouts_ = std::move(next);
}

void RolloutBook::publish_weights(const Rollout& r) {
  const std::vector<double>& w = r.current();
  double total = 0;
  for (const double x : w) total += x;
  for (std::size_t i = 0; i < w.size(); ++i) {
    weight_.with({r.config.name, r.config.targets[i].model}).set(total > 0 ? 100 * w[i] / total : 0);
  }
}

std::optional<std::string> RolloutBook::pick(std::string_view alias, uint64_t hash) {
  std::lock_guard lock(mu_);
  const auto it = rollouts_.find(alias);
  if (it == rollouts_.end()) return std::nullopt;
  const Rollout& r = it->second;
  return r.config.targets[rollout::pick_target(r.current(), hash)].model;
}

void RolloutBook::record(std::string_view alias, std::string_view model, rollout::TimePoint now,
                         const rollout::Outcome& outcome) {
  std::lock_guard lock(mu_);
  const auto it = rollouts_.find(alias);
  if (it == rollouts_.end() || !it->second.judge) return;
  const auto& targets = it->second.config.targets;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].model == model) it->second.judge->record(i, now, outcome);
  }
}

std::vector<RolloutBook::Event> RolloutBook::evaluate(rollout::TimePoint now) {
  std::vector<Event> events;
  std::lock_guard lock(mu_);
  for (auto& [name, r] : rollouts_) {
    if (!r.judge) continue;
    auto verdict = r.judge->evaluate(now);
    if (!verdict) continue;
    const bool rolled_back = verdict->kind == rollout::Verdict::Kind::kRolledBack;
    verdicts_.with({name, rolled_back ? "rolled_back" : "promoted"}).inc();
    publish_weights(r);
    events.push_back({.alias = name,
                      .canary = r.config.canary->target,
                      .margin = r.config.canary->margin,
                      .verdict = std::move(*verdict)});
  }
  return events;
}

}  // namespace arbiter
