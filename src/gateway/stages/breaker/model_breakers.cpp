#include "gateway/stages/breaker/model_breakers.hpp"

#include <algorithm>
#include <cstdio>

#include "core/resilience/resilience_settings.hpp"
#include "observability/event_log.hpp"

namespace arbiter {

ModelBreakers::ModelBreakers(const Config& config, metrics::Registry& registry) : metrics_(registry) {
  // A model split into per-class pools appears once per pool: one breaker.
  for (const ModelConfig& m : config.models) {
    if (std::find(names_.begin(), names_.end(), m.name) != names_.end()) continue;
    names_.push_back(m.name);
    breakers_.emplace_back(
        resilience::breaker_settings(config.model_breaker, !m.degraded.empty(), !m.fallback.empty()));
  }
}

void ModelBreakers::carry_from(ModelBreakers& old, const std::vector<std::string>& models) {
  std::scoped_lock lock(mu_, old.mu_);
  for (const std::string& model : models) {
    const auto to = index(model);
    const auto from = old.index(model);
    if (to && from) breakers_[*to] = old.breakers_[*from];
  }
}

std::optional<std::size_t> ModelBreakers::index(std::string_view model) const {
  const auto it = std::find(names_.begin(), names_.end(), model);
  if (it == names_.end()) return std::nullopt;
  return static_cast<std::size_t>(it - names_.begin());
}

resilience::BreakerRoute ModelBreakers::route(std::size_t index, TimePoint now) {
  std::lock_guard lock(mu_);
  const resilience::BreakerRoute r = breakers_[index].route(now);
  note_transitions_locked(index);
  return r;
}

void ModelBreakers::record(std::size_t index, const resilience::BreakerRoute& route, bool failure,
                           TimePoint now) {
  std::lock_guard lock(mu_);
  breakers_[index].record(route, failure, now);
  note_transitions_locked(index);
}

void ModelBreakers::release(std::size_t index, const resilience::BreakerRoute& route, TimePoint now) {
  std::lock_guard lock(mu_);
  breakers_[index].release(route, now);
  note_transitions_locked(index);
}

void ModelBreakers::backend_recovered(std::size_t index, TimePoint now) {
  std::lock_guard lock(mu_);
  breakers_[index].backend_recovered(now);
  note_transitions_locked(index);
}

bool ModelBreakers::waiting_open(std::size_t index, TimePoint now) {
  std::lock_guard lock(mu_);
  const bool open = breakers_[index].waiting_open(now);
  note_transitions_locked(index);
  return open;
}

void ModelBreakers::note_transitions_locked(std::size_t index) {
  for (const resilience::BreakerTransition& t : breakers_[index].take_transitions()) {
    const std::string from(resilience::stage_name(t.from)), to(resilience::stage_name(t.to));
    if (!t.half_open) metrics_.transitions.with({names_[index], from, to}).inc();
    log_event(EventLevel::kWarn, "model_breaker",
              {{"model", names_[index]},
               {"from", from},
               {"to", to},
               {"half_open", t.half_open},
               {"error_rate", t.error_rate},
               {"open_s", std::chrono::duration<double>(t.open_for).count()}});
  }
}

void ModelBreakers::export_state(TimePoint now) {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < breakers_.size(); ++i) {
    const resilience::BreakerStage stage = breakers_[i].stage(now);
    note_transitions_locked(i);
    for (const auto s : {resilience::BreakerStage::kClosed, resilience::BreakerStage::kDegraded,
                         resilience::BreakerStage::kFallback, resilience::BreakerStage::kIsolated}) {
      metrics_.stage.with({names_[i], std::string(resilience::stage_name(s))}).set(s == stage ? 1 : 0);
    }
  }
}

}  // namespace arbiter
