#include "gateway/stages/rollout/rollout_book.hpp"

#include <boost/json.hpp>

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
                                 {"alias", "verdict"})),
      shadow_requests_(registry.counter("arbiter_shadow_requests_total",
                                        "Requests an alias mirrored to its shadow model (sent), or would have but "
                                        "its shadow max_concurrency was reached (skipped_busy).",
                                        {"alias", "shadow", "result"})),
      shadow_pairs_(registry.counter("arbiter_shadow_pairs_total",
                                     "Mirrored requests compared, by which side answered whole: both_ok, "
                                     "shadow_error, primary_error, both_error.",
                                     {"alias", "shadow", "outcome"})),
      shadow_matches_(registry.counter("arbiter_shadow_exact_matches_total",
                                       "Deterministic mirrored requests (temperature 0 or a seed) both sides "
                                       "answered, by whether the texts were the same (yes, no).",
                                       {"alias", "shadow", "match"})),
      shadow_latency_(registry.histogram("arbiter_shadow_latency_seconds",
                                         "Latency of mirrored requests' answers, from dispatch to the end, by side "
                                         "(primary: the real answer; shadow).",
                                         {"alias", "side"})) {}

RolloutBook::ShadowPermit::~ShadowPermit() {
  if (shadow_) shadow_->running.fetch_sub(1, std::memory_order_relaxed);
}

const rollout::ShadowConfig& RolloutBook::ShadowPermit::config() const { return shadow_->config; }

std::size_t RolloutBook::ShadowPermit::next_backend(std::size_t count) const {
  return count == 0 ? 0 : shadow_->turn.fetch_add(1, std::memory_order_relaxed) % count;
}

std::optional<RolloutBook::ShadowPermit> RolloutBook::take_shadow(std::string_view alias) {
  std::shared_ptr<Shadow> shadow;
  {
    std::lock_guard lock(mu_);
    const auto it = rollouts_.find(alias);
    if (it == rollouts_.end() || !it->second.shadow) return std::nullopt;
    shadow = it->second.shadow;
  }
  const uint32_t before = shadow->running.fetch_add(1, std::memory_order_relaxed);
  if (before >= shadow->config.max_concurrency) {
    shadow->running.fetch_sub(1, std::memory_order_relaxed);
    shadow_requests_.with({shadow->alias, shadow->config.model, "skipped_busy"}).inc();
    return std::nullopt;
  }
  shadow_requests_.with({shadow->alias, shadow->config.model, "sent"}).inc();
  return ShadowPermit(std::move(shadow));
}

void RolloutBook::shadow_done(const ShadowPermit& permit, const rollout::AnswerSummary& primary,
                              const rollout::AnswerSummary& shadow, bool deterministic) {
  Shadow& s = *permit.shadow_;
  {
    std::lock_guard lock(s.mu);
    s.tally.add(primary, shadow, deterministic);
  }
  const char* outcome = primary.ok ? (shadow.ok ? "both_ok" : "shadow_error") : (shadow.ok ? "primary_error" : "both_error");
  shadow_pairs_.with({s.alias, s.config.model, outcome}).inc();
  if (deterministic && primary.ok && shadow.ok) {
    shadow_matches_.with({s.alias, s.config.model, primary.text == shadow.text ? "yes" : "no"}).inc();
  }
  shadow_latency_.with({s.alias, "primary"}).observe(primary.latency_ms / 1000);
  shadow_latency_.with({s.alias, "shadow"}).observe(shadow.latency_ms / 1000);
}

void RolloutBook::configure(const std::vector<rollout::AliasConfig>& aliases, rollout::TimePoint now) {
  std::lock_guard lock(mu_);
  StringMap<Rollout> next;
  for (const rollout::AliasConfig& alias : aliases) {
    const auto it = rollouts_.find(alias.name);
    if (it != rollouts_.end() && it->second.config == alias) {
      next.emplace(alias.name, std::move(it->second));  // unchanged: its rollout goes on
      continue;
    }
    Rollout r{.config = alias, .judge = std::nullopt, .weights = {}, .shadow = nullptr};
    if (alias.shadow) {
      r.shadow = std::make_shared<Shadow>();
      r.shadow->alias = alias.name;
      r.shadow->config = *alias.shadow;
    }
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

namespace arbiter {

namespace {

// A figure, or null when there is none yet.
boost::json::value optional_figure(const std::optional<double>& v) {
  return v ? boost::json::value(*v) : boost::json::value(nullptr);
}

boost::json::object side_json(const rollout::SideFigures& f) {
  return {{"requests", f.requests},
          {"error_rate", f.error_rate},
          {"p99_ttft_ms", optional_figure(f.p99_ttft_ms)},
          {"p99_itl_ms", optional_figure(f.p99_itl_ms)}};
}

std::string_view state_name(rollout::CanaryJudge::State s) {
  switch (s) {
    case rollout::CanaryJudge::State::kTrial: return "trial";
    case rollout::CanaryJudge::State::kRolledBack: return "rolled_back";
    case rollout::CanaryJudge::State::kPromoted: return "promoted";
  }
  return "?";
}

}  // namespace

std::string RolloutBook::report_json(rollout::TimePoint now) {
  boost::json::array aliases;
  std::lock_guard lock(mu_);
  for (auto& [name, r] : rollouts_) {
    const std::vector<double>& w = r.current();
    double total = 0;
    for (const double x : w) total += x;
    boost::json::array targets;
    for (std::size_t i = 0; i < w.size(); ++i) {
      targets.push_back({{"model", r.config.targets[i].model}, {"percent", total > 0 ? 100 * w[i] / total : 0}});
    }
    boost::json::object alias{{"alias", name}, {"targets", std::move(targets)}};
    if (r.judge) {
      const auto [canary, stable] = r.judge->figures(now);
      alias["canary"] = {{"target", r.config.canary->target},
                         {"state", state_name(r.judge->state())},
                         {"percent", r.judge->canary_percent()},
                         {"margin", r.config.canary->margin},
                         {"window_s", r.config.canary->window.count()},
                         {"canary_side", side_json(canary)},
                         {"stable_side", side_json(stable)}};
    }
    if (r.shadow) {
      rollout::ShadowReport s;
      {
        std::lock_guard shadow_lock(r.shadow->mu);
        s = r.shadow->tally.report();
      }
      alias["shadow"] = {
          {"model", r.shadow->config.model},
          {"pairs", s.pairs},
          {"primary_errors", s.primary_errors},
          {"shadow_errors", s.shadow_errors},
          {"primary_p50_ms", optional_figure(s.primary_p50_ms)},
          {"primary_p99_ms", optional_figure(s.primary_p99_ms)},
          {"shadow_p50_ms", optional_figure(s.shadow_p50_ms)},
          {"shadow_p99_ms", optional_figure(s.shadow_p99_ms)},
          {"primary_mean_output_tokens", optional_figure(s.primary_mean_tokens)},
          {"shadow_mean_output_tokens", optional_figure(s.shadow_mean_tokens)},
          {"deterministic_pairs", s.deterministic_pairs},
          {"exact_matches", s.exact_matches},
          {"exact_match_rate", s.deterministic_pairs ? boost::json::value(static_cast<double>(s.exact_matches) /
                                                                           static_cast<double>(s.deterministic_pairs))
                                                     : boost::json::value(nullptr)}};
    }
    aliases.push_back(std::move(alias));
  }
  return boost::json::serialize(boost::json::object{{"object", "list"}, {"data", std::move(aliases)}});
}

}  // namespace arbiter
