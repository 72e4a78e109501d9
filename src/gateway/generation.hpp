// Everything the gateway builds from one config: what requests read (the
// Runtime: config, tenants, classifier, a model's pools), the model pools'
// upstream connections, the backends' health, engine signals and adaptive
// capacity, the model breakers, the overload stages, the teams' dynamic
// quotas, the service exchange, CORS and the request pipeline over them.
//
// A config reload builds a new Generation and makes it current
// (gateway/config_reload.hpp). A request keeps the generation it started in
// to its end (Pipeline::run holds it), and a dispatch carries the one that
// was current when it was made (Dispatcher::Slot::generation()), so pool
// and backend numbers always index the config they came from. A retired
// generation's loops stop at once; its memory goes with its last request.
//
// What outlives every generation is the Gateway's: the dispatcher (its
// scheduler is carried across), metrics, quotas, usage, the result cache,
// the access log.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "core/config.hpp"
#include "gateway/backend_capacity.hpp"
#include "gateway/admin/state_export.hpp"
#include "gateway/backend_monitor.hpp"
#include "gateway/cors.hpp"
#include "gateway/dispatch/dispatcher.hpp"
#include "gateway/dispatch/service_exchange.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/pipeline/pipeline.hpp"
#include "gateway/resilience/backend_health.hpp"
#include "gateway/runtime.hpp"
#include "gateway/stages/breaker/model_breakers.hpp"
#include "gateway/stages/cache/result_cache.hpp"
#include "gateway/stages/degrade/overload_control.hpp"
#include "gateway/stages/quota/dynamic_quota_updater.hpp"
#include "gateway/stages/quota/quota_book.hpp"
#include "gateway/stages/rollout/rollout_book.hpp"
#include "gateway/store/store_writer.hpp"
#include "gateway/observers/tracing/trace_exporter.hpp"
#include "observability/batched_line_writer.hpp"

namespace arbiter {

// The gateway's long-lived parts a generation works with.
struct GenerationDeps {
  GatewayMetrics& metrics;
  QuotaBook& quotas;
  UsageBook& usage;
  ResultCache& cache;
  RolloutBook& rollouts;
  BatchedLineWriter* access_log;  // null: the access log is off
  StoreWriter* store;             // null: the usage and audit store is off
  TraceExporter* traces;          // null: tracing is off
  std::size_t io_threads;
  net::any_io_executor timer_executor;
};

class Generation final : public RunParts {
 public:
  // Builds the parts (nothing runs yet). `hash`: the config's version (the
  // access log's and arbiter_config_info's).
  Generation(Config config, std::string hash, const GenerationDeps& deps);
  ~Generation() override;
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // The scheduler this config asks for (the first generation's is the
  // dispatcher's own; a reload's replaces the old one).
  sched::Scheduler make_scheduler() const;
  // At a reload: the models in `unchanged` (same settings and backends in
  // both configs) go on with `old`'s model breakers (when model_breaker is
  // unchanged too), outlier detection and retry budgets (when
  // outlier_detection and retries are), load coefficient and degradation
  // stage (when degradation is) and adaptive capacity limits (when
  // adaptive_capacity is), instead of starting afresh.
  struct Unchanged {
    std::vector<std::string> models;
    bool breaker_settings = false;
    bool outlier_settings = false;
    bool degradation_settings = false;
    bool capacity_settings = false;
  };
  struct Carry {
    const Generation& old;
    const Unchanged& unchanged;
  };
  // Connects to the dispatcher whose scheduler now numbers things as this
  // config does (at `epoch`), builds the parts, takes over what `carry`
  // names (a reload's) and only then starts the loops, so the engine monitor
  // never judges a carried part before it holds the old state; assembles
  // the pipeline.
  void start(Dispatcher& dispatcher, uint64_t epoch, std::optional<Carry> carry = std::nullopt);
  // Retired by a reload (or the gateway's end): the loops stop; requests
  // still in it finish.
  void stop();

  const Runtime& runtime() const { return runtime_; }
  const Config& config() const override { return runtime_.config; }
  const std::string& hash() const { return hash_; }
  const Pipeline& pipeline() const { return pipeline_; }
  const Cors& cors() const { return cors_; }
  ModelPool& pool(sched::PoolId p) const override { return *pools_[p]; }
  BackendHealth& health() const override { return *health_; }
  // Copies the scheduler's (while it is still this config's), the
  // monitor's, the backends' health and the breakers' state into the metrics.
  void refresh_metrics();

 private:
  void carry_from(const Generation& old, const Unchanged& unchanged);
  void start_monitor();

  const Runtime runtime_;
  const std::string hash_;
  GenerationDeps deps_;
  std::vector<std::unique_ptr<ModelPool>> pools_;  // in config order (= PoolId)
  std::optional<SchedulerLink> link_;              // set by start()
  ShownTenantQueues shown_tenant_queues_;          // refresh_metrics: tenant queue gauges last set
  ExportedMonitorCounts exported_monitor_;         // refresh_metrics: the monitor's counters last added
  std::unique_ptr<BackendHealth> health_;          // engine signals + outlier ejection -> scheduler
  std::unique_ptr<ModelBreakers> breakers_;        // per model: staged fallbacks
  std::unique_ptr<BackendCapacity> capacity_;      // adaptive capacity (fed by monitor_); null if disabled
  std::unique_ptr<OverloadControl> overload_;      // load coefficient and degradation stages
  std::unique_ptr<BackendMonitor> monitor_;        // engine signals; null if disabled
  std::unique_ptr<DynamicQuotaUpdater> dynamic_quotas_;  // teams' dynamic quotas from usage
  std::unique_ptr<ServiceExchange> service_exchange_;    // tenant fairness across replicas; null without Redis
  uint64_t exchanges_before_ = 0;  // arbiter_service_exchanges_total when it started (earlier generations')
  const Cors cors_;
  Pipeline pipeline_;
  bool stopped_ = false;
};

}  // namespace arbiter
