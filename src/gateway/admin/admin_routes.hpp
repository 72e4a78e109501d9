// The gateway's own endpoints, apart from the inference routes: GET
// /healthz (alive), /readyz (listener up and not draining), /metrics
// (Prometheus text, the scheduler's and monitor's state copied in first),
// /admin/usage (the usage report, docs/usage.md), /v1/models and
// /v1/models/{model} (authenticated like inference), /dashboard (the admin
// listener's page, docs/dashboard.md); HEAD of each.
// /metrics and /admin/* ask for the admin token when one is configured, and
// move to the admin listener when it is enabled (docs/security.md, "Admin
// listener").
#pragma once

#include <atomic>
#include <expected>
#include <functional>
#include <string>
#include <string_view>

#include <boost/asio/thread_pool.hpp>

#include "core/config.hpp"
#include "core/tenants.hpp"
#include "core/store/store_rows.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/reload/config_control.hpp"
#include "gateway/runtime.hpp"
#include "gateway/observers/usage/usage_book.hpp"
#include "http/client_connection.hpp"
#include "http/server.hpp"

namespace arbiter {

class AdminRoutes {
 public:
  // `refresh`: copies live state into `metrics` before /metrics renders it.
  // `flush_cache(model)`: the result cache's flush (empty: every model),
  // its answer's JSON.
  // `runtime()`: the current config generation's (a reload changes it).
  // `config`: reloads, rollbacks and the versions (/admin/config*).
  // `rollouts()`: the model aliases' report (GET /admin/rollouts).
  // `audit(limit)`: the store's newest audit rows, or why there are none
  // (the store or its audit off); called on render_'s thread.
  using AuditRows = std::expected<std::vector<store::AuditRow>, std::string>;
  AdminRoutes(std::function<std::shared_ptr<const Runtime>()> runtime, GatewayMetrics& metrics,
              const UsageBook& usage, std::function<void()> refresh,
              std::function<Task<std::string>(std::string)> flush_cache, ConfigControl& config,
              std::function<std::string()> rollouts, std::function<AuditRows(int)> audit);

  // POST /admin/cache/flush[?model=NAME]: the one route that changes state.
  static constexpr std::string_view kCacheFlush = "/admin/cache/flush";
  // POST /admin/config (a new config's YAML as the body), POST
  // /admin/config/rollback?version=HASH, GET /admin/config (the running
  // YAML) and /admin/config/versions.
  static constexpr std::string_view kConfig = "/admin/config";
  static constexpr std::string_view kConfigRollback = "/admin/config/rollback";
  static constexpr std::string_view kConfigVersions = "/admin/config/versions";
  // GET /admin/rollouts: each alias's weights, canary and shadow comparison.
  static constexpr std::string_view kRollouts = "/admin/rollouts";
  // GET /admin/audit[?limit=N]: the audit trail's newest rows (docs/audit.md).
  static constexpr std::string_view kAudit = "/admin/audit";
  // The routes that change state, and so take POST.
  static bool takes_post(std::string_view path) {
    return path == kCacheFlush || path == kConfigRollback;
  }
  // Whether `method` is one `path` takes (GET and HEAD; POST for the flush
  // and the rollback; both for /admin/config).
  static bool accepts(std::string_view path, http::verb method);

  // Whether `path` is one of these routes.
  static bool serves(std::string_view path);
  // Whether `path` is one that shows tenants and traffic (/metrics,
  // /admin/*, and /dashboard, the page over them): the admin listener's
  // alone, never the public port's.
  static bool operator_only(std::string_view path);
  // Answers a request of a path serves() accepted, in a method it
  // accepts(), with `headers` (x-request-id).
  Task<void> handle(std::string_view path, HttpRequest& req, ClientConnection& conn,
                    const std::vector<std::pair<std::string, std::string>>& headers);

  void set_ready(bool ready) { ready_ = ready; }

 private:
  // GET /admin/audit: the rows as an OpenAI-style list, newest first.
  Task<void> audit_list(HttpRequest& req, ClientConnection& conn,
                        const std::vector<std::pair<std::string, std::string>>& headers);
  // /metrics' text: the refresh and the render, on render_'s thread.
  Task<std::string> metrics_text();
  static std::string models_body(const Config& config);
  // GET /v1/models/{model}: the model's object, or 404 model_not_found.
  static Task<void> model_info(const Config& config, std::string_view encoded_name, ClientConnection& conn,
                        const std::vector<std::pair<std::string, std::string>>& headers);
  // Whether the request carries the admin token (or none is configured).
  static bool authorized(const HttpRequest& req, const Config& config);
  // POST /admin/cache/flush: the cache's answer, or 400 for a model not served.
  Task<void> cache_flush(const Config& config, HttpRequest& req, ClientConnection& conn,
                         const std::vector<std::pair<std::string, std::string>>& headers);
  // GET /admin/usage: the report for the target's query, or 400.
  Task<void> usage_report(HttpRequest& req, ClientConnection& conn,
                          const std::vector<std::pair<std::string, std::string>>& headers);

  // POST /admin/config and /admin/config/rollback: the reload's outcome as JSON.
  Task<void> config_change(std::string_view path, HttpRequest& req, ClientConnection& conn,
                           const std::vector<std::pair<std::string, std::string>>& headers);

  std::function<std::shared_ptr<const Runtime>()> runtime_;
  GatewayMetrics& metrics_;
  const UsageBook& usage_;
  std::function<void()> refresh_;
  std::function<Task<std::string>(std::string)> flush_cache_;
  ConfigControl& config_;
  std::function<std::string()> rollouts_;
  std::function<AuditRows(int)> audit_;
  std::atomic<bool> ready_{false};
  // A thread of its own for /metrics (last: joined first): with thousands of
  // tenants a page takes milliseconds, which the streams of the I/O thread
  // that took the scrape would otherwise wait; scrapes take turns on it.
  boost::asio::thread_pool render_{1};
};

}  // namespace arbiter
