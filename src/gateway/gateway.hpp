// The gateway's request handler: a router. The OpenAI routes run the
// request pipeline of the current config generation (gateway/generation.hpp:
// the config's pools, backends' health, breakers, overload stages and the
// pipeline over them); the admin endpoints are AdminRoutes. Holds what
// outlives a config reload: the dispatcher (its scheduler is carried to each
// new config), metrics, quotas, usage, the result cache, the access log, and
// the config versions (reload(), docs/deployment.md "Config changes").
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "gateway/admin/admin_routes.hpp"
#include "gateway/batch/batch_book.hpp"
#include "gateway/batch/batch_routes.hpp"
#include "gateway/dispatch/dispatcher.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/generation.hpp"
#include "gateway/observers/refusals/refusal_log.hpp"
#include "gateway/observers/tracing/trace_exporter.hpp"
#include "gateway/observers/usage/usage_book.hpp"
#include "gateway/periodic.hpp"
#include "gateway/reload/config_control.hpp"
#include "gateway/reload/config_versions.hpp"
#include "gateway/runtime.hpp"
#include "gateway/stages/cache/result_cache.hpp"
#include "gateway/stages/quota/quota_book.hpp"
#include "gateway/store/store_metrics.hpp"
#include "gateway/store/store_writer.hpp"
#include "observability/event_log.hpp"
#include "gateway/stages/rollout/rollout_book.hpp"
#include "http/server.hpp"
#include "observability/batched_line_writer.hpp"

namespace arbiter {

// Where the Batch API keeps its files' bytes and its lines' answers (`dir`)
// and its records (the usage store `store` names), both paths resolved.
struct BatchPlace {
  std::filesystem::path dir;
  StoreConfig store;
};

class Gateway final : public ConfigControl {
 public:
  // Makes a config ready to run before a generation is built from it, or
  // says why it cannot (embedded simulated engines: their addresses).
  using ConfigPreparer = std::function<std::optional<std::string>(Config&)>;

  // `timer_executor` runs the scheduler's deadline timer (and a batch's
  // lines). `access_log`: where the access log goes (null: log.access_log
  // is off). `text` and `source`: the config's YAML and where it came from
  // (its first version). `batches`: where the Batch API keeps its files and
  // records (none: batches.enabled is false); a place that cannot be opened
  // is logged and the Batch API's routes say so, inference goes on.
  Gateway(Config config, std::string text, std::string source, std::size_t io_threads,
          net::any_io_executor timer_executor, std::unique_ptr<BatchedLineWriter> access_log = nullptr,
          std::unique_ptr<StoreWriter> store = nullptr, std::optional<BatchPlace> batches = std::nullopt);
  ~Gateway() override;

  // The public listener: inference routes, /v1/models, /healthz, /readyz,
  // and /metrics and /admin/* unless the admin listener serves them.
  Task<void> handle(HttpRequest& req, ClientConnection& conn);
  // The admin listener (admin.enabled): /healthz, /readyz, /metrics, /admin/*.
  Task<void> handle_admin(HttpRequest& req, ClientConnection& conn);

  // A config reload (SIGHUP, POST /admin/config, a rollback): the YAML is
  // validated as --check does, then swapped in atomically. Requests running
  // finish under their config; queued ones move to the new config's pools
  // and classes (answered 503 when it has none for them); removed backends
  // drain; counters and quota state carry over by name. Rejected: nothing
  // changes. Settings only a restart applies (restart_only_changes) reject
  // it too. Any thread; reloads take turns.
  ReloadOutcome reload(std::string text, std::string source) override;
  // Reloads a kept version (its hash or a unique prefix of 6+ digits).
  ReloadOutcome rollback(std::string_view hash) override;
  // The versions, newest first, as the admin API's JSON.
  std::string versions_json() const override;
  std::string current_text() const override;
  void set_config_preparer(ConfigPreparer prepare) { prepare_ = std::move(prepare); }

  // /readyz answers 200 only while ready (listener up, not draining).
  void set_ready(bool ready) { admin_->set_ready(ready); }
  // Draining starts: queued requests are answered 503 shutting_down at once
  // (and new ones too); running ones continue (docs/deployment.md, "Stop").
  void begin_drain() { dispatcher_->shut_down_queue(); }
  // Batch lines stop (their jobs resume at the next start) and end, within
  // `deadline`: first in a drain, while the io_context still runs.
  Task<void> stop_batches(std::chrono::milliseconds deadline);
  // The spans still queued are exported (tracing), within `deadline`: last
  // in a drain.
  Task<void> flush_traces(std::chrono::milliseconds deadline);
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
  // The start-up config: what the listeners were built from (a reload may
  // not change those settings).
  const Config& config() const { return startup_config_; }
  GatewayMetrics& metrics() { return metrics_; }

 private:
  // A request that is not an inference POST: an admin route (`admin`), a
  // wrong method for a known route, or 404.
  Task<void> answer_get(HttpRequest& req, ClientConnection& conn, std::string_view path, bool inference,
                        bool admin, std::shared_ptr<Generation> generation);
  // /v1/files and /v1/batches (the Batch API).
  Task<void> answer_batch(HttpRequest& req, ClientConnection& conn, std::string_view path,
                          std::shared_ptr<Generation> generation);
  // A 404 or 405 of the router, for the refusal log.
  void note_route_refusal(const HttpRequest& req, const ApiError& err, std::string_view reason);
  // A CORS preflight (OPTIONS) for a route answering `methods`.
  Task<void> answer_preflight(HttpRequest& req, ClientConnection& conn, std::string_view methods,
                              std::shared_ptr<Generation> generation);
  // Copies the current generation's and the quotas' state into the registry.
  void refresh_metrics();
  // Seeds the usage ledger from the store, taps the event log's decisions
  // into the audit trail, starts the writer.
  void start_store(const StoreConfig& settings);
  // Opens the Batch API's folder and resumes its unfinished jobs.
  void start_batches(const BatchPlace& place);
  // What every generation is built with: the long-lived parts.
  GenerationDeps generation_deps();
  // The reload once the text parsed; under reload_mu_.
  ReloadOutcome apply_locked(Config next, std::string text, std::string source);
  // Sets arbiter_config_info for the current version (and clears the last).
  void show_version_locked();
  // Frees retired generations no request or dispatch holds any more, once
  // their loops' last steps are surely over (the retire sweep's step).
  void sweep_retired();
  // Judges the aliases' canaries (every second) and logs each verdict with its figures.
  void judge_canaries();

  // Before the parts that register their own metric families with it.
  GatewayMetrics metrics_;
  const Config startup_config_;  // a copy: the listeners' and the long-lived parts' settings
  QuotaBook quotas_;  // tenant and team quotas (in-process or shared through Redis)
  UsageBook usage_;   // usage per tenant, model and class by the hour (/admin/usage)
  std::unique_ptr<ResultCache> cache_;  // the result cache's store (stages/cache)
  RolloutBook rollouts_;                // the model aliases' weights and canaries (stages/rollout)
  // Written to by the pipeline's AccessLogObserver, so it outlives every
  // generation's pipeline: its destructor writes what is still buffered.
  std::unique_ptr<BatchedLineWriter> access_log_;
  std::unique_ptr<RefusalLog> refusals_;  // refusals before the pipeline: counted, logged (rate-limited)
  // The usage and audit store (store.enabled): the pipeline's StoreObserver
  // writes to it, so it outlives every generation; its metrics, and the
  // event log's decisions (breakers, ejections, stages, reloads) tapped
  // into its audit trail.
  std::unique_ptr<StoreWriter> store_;
  std::unique_ptr<StoreMetrics> store_metrics_;
  // Traced requests' spans, exported (tracing.endpoint); null when off.
  // Before the generations: their observers write to it.
  std::unique_ptr<TraceExporter> traces_;
  EventTap audit_tap_;
  net::any_io_executor timer_executor_;
  std::size_t io_threads_;
  std::unique_ptr<Dispatcher> dispatcher_;  // queues and the scheduler, carried across reloads
  CurrentSlot<Generation> generation_;      // what new requests run in
  std::unique_ptr<AdminRoutes> admin_;
  // The Batch API (batches.enabled): jobs run through the current
  // generation's pipeline; null when off.
  std::unique_ptr<batch::BatchBook> batches_;
  std::unique_ptr<batch::BatchRoutes> batch_routes_;
  std::string batches_error_;  // why batches.dir could not be opened: its routes answer 500 saying so
  ConfigPreparer prepare_;

  mutable std::mutex reload_mu_;  // reloads take turns; guards what follows
  ConfigVersions versions_;
  std::string shown_version_;  // the hash arbiter_config_info shows as current
  struct Retired {
    std::shared_ptr<Generation> generation;
    std::chrono::steady_clock::time_point free_after;
  };
  std::vector<Retired> retired_;
  Periodic retire_sweep_;
};

}  // namespace arbiter
