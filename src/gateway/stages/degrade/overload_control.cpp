#include "gateway/stages/degrade/overload_control.hpp"

#include <algorithm>

#include "core/overload/scheduler_load.hpp"
#include "observability/event_log.hpp"

namespace arbiter {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::vector<overload::ClassActions> degrade_actions(const Config& config) {
  std::vector<sched::ClassPolicy> policies;
  for (const ClassConfig& c : config.classes) policies.push_back(c.policy);
  std::vector<overload::ClassActions> out =
      overload::default_class_actions(policies, config.degradation.cap_max_tokens);
  for (std::size_t c = 0; c < config.classes.size(); ++c) {
    if (config.classes[c].degrade) out[c] = *config.classes[c].degrade;
  }
  return out;
}

OverloadControl::OverloadControl(const Config& config, std::vector<overload::ClassActions> actions,
                                 SchedulerLink dispatcher, metrics::Registry& registry)
    : config_(config), actions_(std::move(actions)), dispatcher_(dispatcher), metrics_(registry) {
  for (const ModelConfig& model : config.models) {
    auto pool = std::make_unique<Pool>();
    pool->controller = overload::StageController(config.degradation);
    const std::string name = model.pool_name();
    pool->drain_ms = std::make_unique<std::atomic<int64_t>[]>(config.classes.size());
    pool->load_gauge = &metrics_.pool_load.with({name});
    pool->stage_gauge = &metrics_.stage.with({name});
    pool->since_gauge = &metrics_.stage_since.with({name});
    pool->since = unix_now();  // normal since the start
    pool->since_gauge->set(pool->since);
    for (const BackendConfig& b : model.backends) {
      Backend& backend = pool->backends.emplace_back();
      backend.gauge = &metrics_.backend_load.with({name, b.name});
      const char* kTerms[] = {"busy", "kv", "queue", "cache_miss"};
      for (int t = 0; t < 4; ++t) backend.terms[t] = &metrics_.load_term.with({name, b.name, kTerms[t]});
    }
    pool->loads.resize(model.backends.size());
    pools_.push_back(std::move(pool));
  }
}

std::chrono::milliseconds OverloadControl::retry_after(std::size_t pool, std::size_t cls) const {
  const int64_t ms = pools_[pool]->drain_ms[cls].load(std::memory_order_relaxed);
  return std::chrono::milliseconds(std::max<int64_t>(ms, 1'000));
}

overload::BackendView OverloadControl::view_of(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal,
                                               const EngineLoad& load, sched::TimePoint now) {
  overload::BackendView view;
  dispatcher_.inspect([&](const sched::Scheduler& s) {
    view = overload::scheduler_view(s, pool, backend, now);
    for (sched::ClassId k = 0; k < config_.classes.size(); ++k) {
      pools_[pool]->drain_ms[k].store(s.expected_drain(pool, k, now).count(), std::memory_order_relaxed);
    }
  });
  view.fresh = !signal.stale && !signal.down;
  if (!view.fresh) return view;  // the engine's figures are not read
  view.engine_running = load.running;
  view.engine_waiting = load.waiting;
  view.kv_usage = load.kv_usage;
  const std::optional<double> window = pools_[pool]->backends[backend].cache.update(load.prefix_cache);
  view.cache_hit_rate = load.cache_hit_rate ? load.cache_hit_rate : window;
  return view;
}

void OverloadControl::carry_from(const OverloadControl& old, uint32_t from, uint32_t to) {
  overload::Stage stage;
  {
    std::scoped_lock lock(mu_, old.mu_);
    const Pool& was = *old.pools_[from];
    Pool& is = *pools_[to];
    if (was.backends.size() != is.backends.size()) return;  // an unchanged model has the same backends
    for (std::size_t b = 0; b < is.backends.size(); ++b) {
      is.backends[b].load = was.backends[b].load;
      is.backends[b].cache = was.backends[b].cache;
    }
    is.loads = was.loads;
    is.controller = was.controller;
    is.since = was.since;
    stage = is.controller.stage();
    is.stage.store(static_cast<uint8_t>(stage), std::memory_order_relaxed);
    is.load.store(was.load.load(std::memory_order_relaxed), std::memory_order_relaxed);
    is.stage_gauge->set(static_cast<double>(stage));
    is.since_gauge->set(is.since);
  }
  if (config_.degradation.enabled) pause_for(to, stage);
}

void OverloadControl::observe(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal,
                              const EngineLoad& load, sched::TimePoint now) {
  std::lock_guard lock(mu_);
  Pool& p = *pools_[pool];
  Backend& b = p.backends[backend];
  const overload::BackendView view = view_of(pool, backend, signal, load, now);
  const overload::LoadTerms terms = overload::load_terms(view);
  if (signal.down) {
    b.load.reset();  // no capacity to press: out of the pool's mean
  } else if (const auto l = overload::combine(terms, config_.degradation)) {
    b.gauge->set(b.load.update(*l, now, config_.degradation.smoothing));
  }
  const std::optional<double>* known[] = {&terms.busy, &terms.kv, &terms.queue, &terms.cache_miss};
  for (int t = 0; t < 4; ++t) {
    if (*known[t]) b.terms[t]->set(**known[t]);
  }

  p.loads[backend] = {b.load.value(), view.slots};
  const auto pool_load = overload::pool_load(p.loads);
  if (!pool_load) return;  // nothing known: the stage stays
  p.load.store(*pool_load, std::memory_order_relaxed);
  p.load_gauge->set(*pool_load);
  const overload::Stage before = p.controller.stage();
  if (p.controller.step(*pool_load, now) != before) enter(pool, before, terms);
}

void OverloadControl::enter(uint32_t pool, overload::Stage from, const overload::LoadTerms& terms) {
  Pool& p = *pools_[pool];
  const overload::Stage to = p.controller.stage();
  p.stage.store(static_cast<uint8_t>(to), std::memory_order_relaxed);
  p.stage_gauge->set(static_cast<double>(to));
  p.since = unix_now();
  p.since_gauge->set(p.since);
  const std::string name = config_.models[pool].pool_name();
  metrics_.transitions.with({name, std::string(overload::stage_name(to))}).inc();
  const bool enabled = config_.degradation.enabled;
  log_event(to > from ? EventLevel::kWarn : EventLevel::kInfo, "degradation_stage",
            {{"pool", name},
             {"from", overload::stage_name(from)},
             {"to", overload::stage_name(to)},
             {"load", p.load.load(std::memory_order_relaxed)},
             {"busy", terms.busy.value_or(-1)},
             {"kv", terms.kv.value_or(-1)},
             {"queue", terms.queue.value_or(-1)},
             {"cache_miss", terms.cache_miss.value_or(-1)},
             {"enabled", enabled}});
  if (enabled) pause_for(pool, to);
}

void OverloadControl::pause_for(uint32_t pool, overload::Stage stage) {
  for (sched::ClassId k = 0; k < actions_.size(); ++k) {
    dispatcher_.set_class_paused(pool, k, overload::paused_at(stage, actions_[k]));
  }
}

}  // namespace arbiter
