// One ModelBreaker (core/resilience/model_breaker.hpp) per model served,
// behind one mutex: the requests of every I/O thread route through it and
// record into it. Stage changes are logged, counted and shown as gauges.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/resilience/model_breaker.hpp"
#include "gateway/stages/breaker/breaker_metrics.hpp"

namespace arbiter {

class ModelBreakers {
 public:
  using TimePoint = sched::TimePoint;

  ModelBreakers(const Config& config, metrics::Registry& registry);

  // The breaker of a model, by name; none for a model not served.
  std::optional<std::size_t> index(std::string_view model) const;
  const std::string& model(std::size_t index) const { return names_[index]; }

  resilience::BreakerRoute route(std::size_t index, TimePoint now);
  void record(std::size_t index, const resilience::BreakerRoute& route, bool failure, TimePoint now);
  // A routed request refused by a later admission stage (ModelBreaker::release).
  void release(std::size_t index, const resilience::BreakerRoute& route, TimePoint now);

  // ModelBreaker::backend_recovered and waiting_open, by index.
  void backend_recovered(std::size_t index, TimePoint now);
  bool waiting_open(std::size_t index, TimePoint now);

  // A config reload: the breakers of `models` (unchanged by it, under the
  // same model_breaker settings) go on from where `old`'s were, open or not.
  void carry_from(ModelBreakers& old, const std::vector<std::string>& models);

  // Gauges for a metrics scrape.
  void export_state(TimePoint now);
  // The breaker's metric families (BreakerStage counts its reroutes there).
  BreakerMetrics& metrics() { return metrics_; }

 private:
  void note_transitions_locked(std::size_t index);

  BreakerMetrics metrics_;
  std::vector<std::string> names_;  // model names, one breaker each
  std::mutex mu_;
  std::vector<resilience::ModelBreaker> breakers_;  // guarded by mu_
};

}  // namespace arbiter
