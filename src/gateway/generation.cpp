#include "gateway/generation.hpp"

#include <algorithm>
#include <stdexcept>

#include "gateway/admin/state_export.hpp"
#include "gateway/handler/dispatch_handler.hpp"
#include "gateway/pipeline_registry.hpp"
#include "gateway/scheduler_setup.hpp"

namespace arbiter {

Generation::Generation(Config config, std::string hash, const GenerationDeps& deps)
    : runtime_(std::move(config)), hash_(std::move(hash)), deps_(deps), cors_(runtime_.config.cors) {
  const Config& cfg = runtime_.config;
  for (const ModelConfig& model : cfg.models) pools_.push_back(std::make_unique<ModelPool>(model, deps_.io_threads));
  breakers_ = std::make_unique<ModelBreakers>(cfg, deps_.metrics.registry);
}

Generation::~Generation() { stop(); }

sched::Scheduler Generation::make_scheduler() const {
  auto scheduler = sched::Scheduler::create(to_scheduler_config(runtime_.config));
  // The config loader validated the same rules: failing here is a bug.
  if (!scheduler) throw std::logic_error("scheduler config: " + scheduler.error());
  return std::move(*scheduler);
}

void Generation::start(Dispatcher& dispatcher, uint64_t epoch, std::optional<Carry> carry) {
  const Config& cfg = runtime_.config;
  link_.emplace(dispatcher, epoch);
  const sched::SchedulerConfig scheduling = to_scheduler_config(cfg);
  for (std::size_t p = 0; p < pools_.size(); ++p) {
    for (const sched::PoolId lender : scheduling.pools[p].lenders) pools_[p]->also_runs_on(cfg.models[lender]);
  }
  overload_ = std::make_unique<OverloadControl>(cfg, degrade_actions(cfg), *link_, deps_.metrics.registry);
  health_ = std::make_unique<BackendHealth>(cfg, *link_, deps_.timer_executor, deps_.metrics);
  // What the scheduler holds for each backend (a reload's carried signals,
  // an added backend held down): health starts from it.
  link_->inspect([&](const sched::Scheduler& s) {
    for (std::size_t p = 0; p < cfg.models.size(); ++p) {
      for (std::size_t b = 0; b < cfg.models[p].backends.size(); ++b) {
        health_->assume(static_cast<uint32_t>(p), static_cast<uint32_t>(b),
                        s.backend_signal(static_cast<sched::PoolId>(p), static_cast<sched::BackendId>(b)));
      }
    }
  });
  // Pool p serves model cfg.models[p]: its breaker's index by name.
  std::vector<std::size_t> breaker_of;
  for (const ModelConfig& m : cfg.models) breaker_of.push_back(*breakers_->index(m.name));
  if (cfg.health_probes.enabled) {
    health_->set_breaker_hooks(
        [this, breaker_of](uint32_t pool) { return breakers_->waiting_open(breaker_of[pool], sched::Clock::now()); },
        [this, breaker_of](uint32_t pool) { breakers_->backend_recovered(breaker_of[pool], sched::Clock::now()); });
  }
  // Adaptive capacity and the load coefficient decide at every judgement, changed or not.
  if (cfg.engine_signals.enabled && cfg.any_adaptive_capacity()) {
    capacity_ = std::make_unique<BackendCapacity>(cfg, *link_, pools_, *health_, deps_.metrics, sched::Clock::now());
  }
  if (carry) carry_from(carry->old, carry->unchanged);
  health_->start();
  if (cfg.engine_signals.enabled) start_monitor();
  dynamic_quotas_ = std::make_unique<DynamicQuotaUpdater>(cfg, deps_.quotas, deps_.usage);
  dynamic_quotas_->start(deps_.timer_executor);
  if (!cfg.quota_store.redis.empty()) {
    exchanges_before_ = static_cast<uint64_t>(deps_.metrics.service_exchanges.value());
    service_exchange_ = std::make_unique<ServiceExchange>(cfg, runtime_.pool_index, *link_, deps_.timer_executor);
    service_exchange_->start();
  }

  // The inference routes' chain, from the registry (gateway/pipeline_registry):
  // each stage in its phase's place, then the handler and the observers.
  if (cors_.enabled()) pipeline_.set_cors(cors_);
  pipeline_.set_config_hash(hash_);
  const PipelineParts parts{.config = cfg,
                            .pools = pools_,
                            .metrics = deps_.metrics,
                            .breakers = *breakers_,
                            .overload = *overload_,
                            .quotas = deps_.quotas,
                            .cache = deps_.cache,
                            .usage = deps_.usage,
                            .rollouts = deps_.rollouts,
                            .access_log = deps_.access_log,
                            .store = deps_.store,
                            .traces = deps_.traces};
  for (const StageEntry& stage : stage_registry()) {
    if (stage.in(cfg)) pipeline_.add_stage(stage.make(parts));
  }
  pipeline_.set_handler(std::make_unique<DispatchHandler>(cfg, dispatcher, epoch, *health_, deps_.metrics));
  for (const ObserverEntry& observer : observer_registry()) {
    if (!observer.enabled(cfg)) continue;
    if (auto made = observer.make(parts)) pipeline_.add_observer(std::move(made));
  }
}

void Generation::carry_from(const Generation& old, const Unchanged& unchanged) {
  if (unchanged.breaker_settings) breakers_->carry_from(*old.breakers_, unchanged.models);
  const Config& cfg = runtime_.config;
  const Config& before = old.config();
  for (std::size_t to = 0; to < cfg.models.size(); ++to) {
    if (std::ranges::find(unchanged.models, cfg.models[to].name) == unchanged.models.end()) continue;
    for (std::size_t from = 0; from < before.models.size(); ++from) {
      if (before.models[from].pool_name() != cfg.models[to].pool_name()) continue;
      const auto was = static_cast<uint32_t>(from), is = static_cast<uint32_t>(to);
      if (unchanged.outlier_settings) health_->carry_from(*old.health_, was, is);
      if (unchanged.degradation_settings) overload_->carry_from(*old.overload_, was, is);
      if (unchanged.capacity_settings && capacity_ && old.capacity_) capacity_->carry_from(*old.capacity_, was, is);
    }
  }
}

void Generation::stop() {
  if (stopped_ || !link_) return;
  stopped_ = true;
  if (monitor_) monitor_->stop();
  health_->stop();
  dynamic_quotas_->stop();
  if (service_exchange_) service_exchange_->stop();
}

void Generation::start_monitor() {
  const Config& cfg = runtime_.config;
  std::vector<MonitorTarget> targets;
  for (std::size_t p = 0; p < cfg.models.size(); ++p) {
    const auto& backends = cfg.models[p].backends;
    for (std::size_t b = 0; b < backends.size(); ++b) {
      targets.push_back({.pool = static_cast<uint32_t>(p),
                         .backend = static_cast<uint32_t>(b),
                         .host = backends[b].host,
                         .port = backends[b].port,
                         .name = backends[b].name,
                         .tls = client_tls_for(backends[b])});
    }
  }
  MonitorOptions options;
  options.interval = cfg.engine_signals.interval;
  options.rules.stale_after = cfg.engine_signals.stale_after;
  options.rules.silence_before_down = cfg.engine_signals.silence_before_down;
  options.rules.kv_threshold = cfg.engine_signals.kv_saturation;
  // Verdicts go to the scheduler through BackendHealth (which adds outlier
  // ejection): a saturated backend takes no new dispatch, a stale one falls
  // back to its concurrency limit.
  SignalCallback on_judged = [this](uint32_t pool, uint32_t backend, const sched::BackendSignal& signal,
                                    const EngineLoad& load) {
    const auto now = sched::Clock::now();
    if (capacity_) capacity_->observe(pool, backend, signal, load, now);
    overload_->observe(pool, backend, signal, load, now);
  };
  monitor_ = std::make_unique<BackendMonitor>(
      deps_.timer_executor, std::move(targets), options,
      [this](uint32_t pool, uint32_t backend, const sched::BackendSignal& signal, const EngineLoad& load) {
        health_->on_signal(pool, backend, signal);
        // prefix_cache_tokens: auto takes the engine's KV size when it reports one.
        if (load.kv_cache_tokens && runtime_.config.models[pool].backends[backend].prefix_cache_from_engine) {
          link_->set_prefix_cache(pool, backend, *load.kv_cache_tokens);
        }
      },
      std::move(on_judged));
  monitor_->start();
}

void Generation::refresh_metrics() {
  const Config& cfg = runtime_.config;
  if (!link_) return;
  link_->inspect([&](const sched::Scheduler& s) {
    export_scheduler_state(s, cfg, runtime_.pool_index, deps_.metrics, shown_tenant_queues_);
  });
  if (monitor_) export_monitor_state(*monitor_, cfg, deps_.metrics, exported_monitor_);
  // A total across generations: this one's exchanges on top of those before it.
  if (service_exchange_) deps_.metrics.service_exchanges.set(exchanges_before_ + service_exchange_->exchanges());
  health_->export_state();
  breakers_->export_state(sched::Clock::now());
}

}  // namespace arbiter
