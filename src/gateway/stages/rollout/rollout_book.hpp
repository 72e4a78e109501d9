// The model aliases' live state (docs/rollouts.md): each alias's current
// weights, and its canary's judge. Outlives config reloads: an alias whose
// settings a reload left as they were keeps its rollout (a canary rolled
// back stays so, a promotion keeps its step); a changed one starts afresh
// from its config. Shared by every I/O thread behind one mutex: a pick is
// a lookup and a weighted draw; a record appends to a window.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rollout/canary_judge.hpp"
#include "core/rollout/shadow_compare.hpp"
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

  // Shadow traffic (an alias's `shadow`): a mirrored request's place within
  // the alias's shadow max_concurrency, held while it runs.
  struct Shadow;
  class ShadowPermit {
   public:
    explicit ShadowPermit(std::shared_ptr<Shadow> shadow) : shadow_(std::move(shadow)) {}
    ShadowPermit(ShadowPermit&&) noexcept = default;
    ShadowPermit& operator=(ShadowPermit&&) = delete;
    ~ShadowPermit();
    const rollout::ShadowConfig& config() const;
    // The shadow model's backend this request goes to (round robin over `count`).
    std::size_t next_backend(std::size_t count) const;

   private:
    friend class RolloutBook;
    std::shared_ptr<Shadow> shadow_;
  };
  // A permit when the alias mirrors and has room; counts the request
  // either way (sent or skipped_busy). nullopt: no shadow, or full.
  std::optional<ShadowPermit> take_shadow(std::string_view alias);
  // A mirrored pair's answers, compared (metrics and the report).
  void shadow_done(const ShadowPermit& permit, const rollout::AnswerSummary& primary,
                   const rollout::AnswerSummary& shadow, bool deterministic);

  // GET /admin/rollouts: each alias's weights, canary and shadow comparison.
  std::string report_json(rollout::TimePoint now);

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
    std::shared_ptr<Shadow> shadow;             // with a shadow
    const std::vector<double>& current() const { return judge ? judge->weights() : weights; }
  };
  void publish_weights(const Rollout& r);  // under mu_

  std::mutex mu_;
  StringMap<Rollout> rollouts_;  // by alias name
  metrics::Family<metrics::Gauge>& weight_;
  metrics::Family<metrics::Counter>& verdicts_;
  metrics::Family<metrics::Counter>& shadow_requests_;
  metrics::Family<metrics::Counter>& shadow_pairs_;
  metrics::Family<metrics::Counter>& shadow_matches_;
  metrics::Family<metrics::Histogram>& shadow_latency_;
};

// One alias's shadow: its settings, the mirrored requests running, and
// the comparison so far.
struct RolloutBook::Shadow {
  std::string alias;
  rollout::ShadowConfig config;
  std::atomic<uint32_t> running{0};
  mutable std::atomic<uint64_t> turn{0};  // round robin over the shadow model's backends
  std::mutex mu;
  rollout::ShadowTally tally;  // guarded by mu
};

}  // namespace arbiter
