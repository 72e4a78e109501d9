// The gateway's request handler: a router. The OpenAI routes run the request
// pipeline (gateway/pipeline/: admission stages, dispatch and relay,
// completion observers), assembled here once; the admin endpoints are
// AdminRoutes. Holds the config snapshot requests take (a Runtime: config,
// tenants, classifier, a model's pools; gateway/runtime.hpp) and the shared
// state the stages use: model pools, the dispatcher (scheduler), the backend
// monitor and the metrics.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/classifier.hpp"
#include "core/config.hpp"
#include "core/tenants.hpp"
#include "gateway/admin/admin_routes.hpp"
#include "gateway/admin/state_export.hpp"
#include "gateway/backend_capacity.hpp"
#include "gateway/cors.hpp"
#include "gateway/backend_monitor.hpp"
#include "gateway/dispatch/dispatcher.hpp"
#include "gateway/dispatch/service_exchange.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/observers/refusals/refusal_log.hpp"
#include "gateway/observers/usage/usage_book.hpp"
#include "gateway/stages/quota/dynamic_quota_updater.hpp"
#include "gateway/pipeline/pipeline.hpp"
#include "gateway/resilience/backend_health.hpp"
#include "gateway/runtime.hpp"
#include "gateway/stages/breaker/model_breakers.hpp"
#include "gateway/stages/cache/result_cache.hpp"
#include "gateway/stages/degrade/overload_control.hpp"
#include "gateway/stages/quota/quota_book.hpp"
#include "http/server.hpp"
#include "observability/batched_line_writer.hpp"

namespace arbiter {

class Gateway {
 public:
  // `timer_executor` runs the scheduler's deadline timer. `access_log`:
  // where the access log goes (null: log.access_log is off).
  Gateway(Config config, std::size_t io_threads, net::any_io_executor timer_executor,
          std::unique_ptr<BatchedLineWriter> access_log = nullptr);
  ~Gateway();

  // The public listener: inference routes, /v1/models, /healthz, /readyz,
  // and /metrics and /admin/* unless the admin listener serves them.
  Task<void> handle(HttpRequest& req, ClientConnection& conn);
  // The admin listener (admin.enabled): /healthz, /readyz, /metrics, /admin/*.
  Task<void> handle_admin(HttpRequest& req, ClientConnection& conn);

  // /readyz answers 200 only while ready (listener up, not draining).
  void set_ready(bool ready) { admin_->set_ready(ready); }
  // Draining starts: queued requests are answered 503 shutting_down at once
  // (and new ones too); running ones continue (docs/operations: drain).
  void begin_drain() { dispatcher_->shut_down_queue(); }
  // The drain deadline: running requests stop, a stream with a final
  // shutting_down error event.
  void stop_running() { dispatcher_->interrupt_running(); }
  // SIGUSR1: the access log's file is reopened (logrotate renamed it).
  void reopen_access_log() {
    if (access_log_) access_log_->reopen();
  }
  // A request the HTTP server refused itself (ServerOptions::on_refusal):
  // counted and logged as the router's own refusals are. Any thread.
  void note_refusal(const HttpRefusal& refusal) { refusals_->record(refusal); }
  const Config& config() const { return config_; }
  GatewayMetrics& metrics() { return metrics_; }
  // The inference routes' pipeline (its admission stages, for inspection).
  const Pipeline& pipeline() const { return pipeline_; }

 private:
  void assemble_pipeline();
  // A request that is not an inference POST: an admin route (`admin`), a
  // wrong method for a known route, or 404.
  Task<void> answer_get(HttpRequest& req, ClientConnection& conn, std::string_view path, bool inference,
                        bool admin);
  // A 404 or 405 of the router, for the refusal log.
  void note_route_refusal(const HttpRequest& req, const ApiError& err, std::string_view reason);
  // A CORS preflight (OPTIONS) for a route answering `methods`.
  Task<void> answer_preflight(HttpRequest& req, ClientConnection& conn, std::string_view methods);
  // Copies the scheduler's and the monitor's state into the registry.
  void refresh_metrics();
  void start_monitor(net::any_io_executor executor);

  // The start-up Runtime, which the long-lived parts below (quotas, pools,
  // scheduler, breakers) are built from, and the slot each request takes its
  // own from (a reload, a later issue, would store a new one there).
  const std::shared_ptr<const Runtime> startup_;
  RuntimeSlot runtime_;
  const Config& config_;            // startup_'s
  const TenantDirectory& tenants_;  // startup_'s (the admin routes')
  // Before the parts that register their own metric families with it.
  GatewayMetrics metrics_;
  QuotaBook quotas_;  // tenant and team quotas (in-process or shared through Redis)
  UsageBook usage_;   // usage per tenant, model and class by the hour (/admin/usage)
  std::vector<std::unique_ptr<ModelPool>> pools_;  // in config order (= PoolId)
  const PoolIndex& pool_index_;  // startup_'s: model name -> its pools (pools_ indexes)
  ShownTenantQueues shown_tenant_queues_;  // refresh_metrics: tenant queue gauges last set
  std::unique_ptr<Dispatcher> dispatcher_;     // queues and the scheduler
  std::unique_ptr<BackendHealth> health_;      // engine signals + outlier ejection -> scheduler
  std::unique_ptr<ModelBreakers> breakers_;    // per model: staged fallbacks
  std::unique_ptr<BackendCapacity> capacity_;  // adaptive capacity (fed by monitor_); null if disabled
  std::unique_ptr<ResultCache> cache_;  // the result cache's store (stages/cache)
  std::unique_ptr<OverloadControl> overload_;  // load coefficient and degradation stages (fed by monitor_)
  std::unique_ptr<BackendMonitor> monitor_;    // engine signals; null if disabled
  std::unique_ptr<AdminRoutes> admin_;
  std::unique_ptr<DynamicQuotaUpdater> dynamic_quotas_;  // teams' dynamic quotas from usage_
  std::unique_ptr<ServiceExchange> service_exchange_;    // tenant fairness across replicas; null without Redis
  // Written to by the pipeline's AccessLogObserver, so it outlives pipeline_:
  // its destructor writes what is still buffered.
  std::unique_ptr<BatchedLineWriter> access_log_;
  std::unique_ptr<RefusalLog> refusals_;  // refusals before the pipeline: counted, logged (rate-limited)
  const Cors cors_;  // browser apps' cross-origin requests (config_.cors)
  Pipeline pipeline_;
};

}  // namespace arbiter
