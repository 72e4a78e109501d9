// The gateway's own endpoints, apart from the inference routes: GET
// /healthz (alive), /readyz (listener up and not draining), /metrics
// (Prometheus text, the scheduler's and monitor's state copied in first),
// /admin/usage (the usage report, docs/usage.md), /v1/models and
// /v1/models/{model} (authenticated like inference); HEAD of each.
// /metrics and /admin/* ask for the admin token when one is configured, and
// move to the admin listener when it is enabled (docs/security.md, "Admin
// listener").
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include <boost/asio/thread_pool.hpp>

#include "core/config.hpp"
#include "core/tenants.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/observers/usage/usage_book.hpp"
#include "http/client_connection.hpp"
#include "http/server.hpp"

namespace arbiter {

class AdminRoutes {
 public:
  // `refresh`: copies live state into `metrics` before /metrics renders it.
  // `flush_cache(model)`: the result cache's flush (empty: every model),
  // its answer's JSON.
  AdminRoutes(const Config& config, const TenantDirectory& tenants, GatewayMetrics& metrics,
              const UsageBook& usage, std::function<void()> refresh,
              std::function<Task<std::string>(std::string)> flush_cache);

  // POST /admin/cache/flush[?model=NAME]: the one route that changes state.
  static constexpr std::string_view kCacheFlush = "/admin/cache/flush";
  // Whether `method` is the one `path` takes (GET and HEAD, or POST for the flush).
  static bool accepts(std::string_view path, http::verb method);

  // Whether `path` is one of these routes.
  static bool serves(std::string_view path);
  // Whether `path` is one that shows tenants and traffic (/metrics,
  // /admin/*): the admin listener's alone, never the public port's.
  static bool operator_only(std::string_view path);
  // Answers a request of a path serves() accepted, in a method it
  // accepts(), with `headers` (x-request-id).
  Task<void> handle(std::string_view path, HttpRequest& req, ClientConnection& conn,
                    const std::vector<std::pair<std::string, std::string>>& headers);

  void set_ready(bool ready) { ready_ = ready; }

 private:
  // /metrics' text: the refresh and the render, on render_'s thread.
  Task<std::string> metrics_text();
  std::string models_body() const;
  // GET /v1/models/{model}: the model's object, or 404 model_not_found.
  Task<void> model_info(std::string_view encoded_name, ClientConnection& conn,
                        const std::vector<std::pair<std::string, std::string>>& headers);
  // Whether the request carries the admin token (or none is configured).
  bool authorized(const HttpRequest& req) const;
  // POST /admin/cache/flush: the cache's answer, or 400 for a model not served.
  Task<void> cache_flush(HttpRequest& req, ClientConnection& conn,
                         const std::vector<std::pair<std::string, std::string>>& headers);
  // GET /admin/usage: the report for the target's query, or 400.
  Task<void> usage_report(HttpRequest& req, ClientConnection& conn,
                          const std::vector<std::pair<std::string, std::string>>& headers);

  const Config& config_;
  const TenantDirectory& tenants_;
  GatewayMetrics& metrics_;
  const UsageBook& usage_;
  std::function<void()> refresh_;
  std::function<Task<std::string>(std::string)> flush_cache_;
  std::atomic<bool> ready_{false};
  // A thread of its own for /metrics (last: joined first): with thousands of
  // tenants a page takes milliseconds, which the streams of the I/O thread
  // that took the scrape would otherwise wait; scrapes take turns on it.
  boost::asio::thread_pool render_{1};
};

}  // namespace arbiter
