// The model aliases' live state (docs/rollouts.md): each alias's current
// weights, and its canary's judge. Outlives config reloads: an alias whose
// settings a reload left as they were keeps its rollout (a canary rolled
// back stays so, a promotion keeps its step); a changed one starts afresh
// from its config. Shared by every I/O thread behind one mutex: a pick is
// a lookup and a weighted draw; a record appends to a window.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rollout/canary_judge.hpp"
#include "core/string_map.hpp"
#include "observability/metrics_registry.hpp"

namespace arbiter {

class RolloutBook {
 public:
  explicit RolloutBook(metrics::Registry& registry);

  // The running config's aliases (start-up, each reload).
  void configure(const std::vector<rollout::AliasConfig>& aliases, rollout::TimePoint now);

  // The alias's target for a request whose sticky key hashes to `hash`
  // (rollout::sticky_hash): its model's name; nullopt for no such alias.
  std::optional<std::string> pick(std::string_view alias, uint64_t hash);
  // A request the alias sent to `model` ended so.
  void record(std::string_view alias, std::string_view model, rollout::TimePoint now, const rollout::Outcome& outcome);

  // What a canary's judge decided, for the event log.
  struct Event {
    std::string alias;
    std::string canary;  // its model
    double margin = 0;
    rollout::Verdict verdict;
  };
  // Each canary judged as of `now` (every second); weights change with its verdicts.
  std::vector<Event> evaluate(rollout::TimePoint now);

 private:
  struct Rollout {
    rollout::AliasConfig config;
    std::optional<rollout::CanaryJudge> judge;  // with a canary
    std::vector<double> weights;                // without one: the configured weights
    const std::vector<double>& current() const { return judge ? judge->weights() : weights; }
  };
  void publish_weights(const Rollout& r);  // under mu_

  std::mutex mu_;
  StringMap<Rollout> rollouts_;  // by alias name
  metrics::Family<metrics::Gauge>& weight_;
  metrics::Family<metrics::Counter>& verdicts_;
};

}  // namespace arbiter
