#include "gateway/admin/admin_routes.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <unordered_set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "gateway/admin/dashboard_route.hpp"
#include "gateway/admin/percent_decode.hpp"
#include "gateway/admin/usage_query.hpp"
#include "gateway/admin/usage_report.hpp"
#include "gateway/error_response.hpp"
#include "core/bearer_token.hpp"

namespace arbiter {

namespace {

constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view kModelPrefix = "/v1/models/";  // GET /v1/models/{model}

boost::json::object model_object(std::string_view name) {
  return {{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "arbiter"}};
}

// A LoRA adapter as vLLM lists one: its base model is its `parent`.
boost::json::object adapter_object(const AdapterConfig& adapter) {
  boost::json::object out = model_object(adapter.name);
  out["parent"] = adapter.model;
  return out;
}

using Headers = std::vector<std::pair<std::string, std::string>>;

Task<void> send_json(ClientConnection& conn, const Headers& headers, http::status status, std::string body,
                     std::string_view content_type = "application/json") {
  http::response<http::string_body> res{status, 11};
  res.set(http::field::content_type, content_type);
  for (const auto& [name, value] : headers) res.set(name, value);
  res.body() = std::move(body);
  co_await conn.send(res);
}

}  // namespace

AdminRoutes::AdminRoutes(std::function<std::shared_ptr<const Runtime>()> runtime, GatewayMetrics& metrics,
                         const UsageBook& usage, std::function<void()> refresh,
                         std::function<Task<std::string>(std::string)> flush_cache, ConfigControl& config,
                         std::function<std::string()> rollouts, std::function<AuditRows(int)> audit)
    : runtime_(std::move(runtime)),
      metrics_(metrics),
      usage_(usage),
      refresh_(std::move(refresh)),
      flush_cache_(std::move(flush_cache)),
      config_(config),
      rollouts_(std::move(rollouts)),
      audit_(std::move(audit)) {}

bool AdminRoutes::serves(std::string_view path) {
  return path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/admin/usage" ||
         path == kCacheFlush || path == kConfig || path == kConfigRollback || path == kConfigVersions ||
         path == kRollouts || path == kAudit || dashboard_asset(path) != nullptr ||
         path == "/v1/models" || path.starts_with(kModelPrefix);
}

bool AdminRoutes::accepts(std::string_view path, http::verb method) {
  const bool get = method == http::verb::get || method == http::verb::head;
  if (path == kConfig) return get || method == http::verb::post;
  if (takes_post(path)) return method == http::verb::post;
  return get;
}

bool AdminRoutes::operator_only(std::string_view path) {
  return path == "/metrics" || path.starts_with("/admin/") || dashboard_path(path);
}

bool AdminRoutes::authorized(const HttpRequest& req, const Config& config) {
  return config.admin.token.empty() || bearer_matches(req["authorization"], config.admin.token);
}

Task<void> AdminRoutes::handle(std::string_view path, HttpRequest& req, ClientConnection& conn,
                               const Headers& headers) {
  const std::shared_ptr<const Runtime> runtime = runtime_();  // this request's config, to its end
  const Config& config = runtime->config;
  // The dashboard's files hold no data: its fetches ask for the token.
  if (operator_only(path) && !dashboard_path(path) && !authorized(req, config)) {
    metrics_.admin_unauthorized.inc();
    Headers with_challenge = headers;
    with_challenge.emplace_back("www-authenticate", "Bearer");
    const ApiError err{ErrorCode::kUnauthorized, std::string(path) + " needs the admin token (admin.token_env or admin.token_file)", {}, {}};
    co_await send_error(conn, err, with_challenge);
    co_return;
  }
  if (path == "/healthz") {
    std::string body = R"({"status":"ok"})";
    co_await send_json(conn, headers, http::status::ok, std::move(body));
  } else if (path == "/readyz") {
    const bool ready = ready_.load();
    const auto status = ready ? http::status::ok : http::status::service_unavailable;
    std::string body = ready ? R"({"status":"ready"})" : R"({"status":"not ready"})";
    co_await send_json(conn, headers, status, std::move(body));
  } else if (path == "/metrics") {
    std::string text = co_await net::co_spawn(render_.get_executor(), metrics_text(), net::use_awaitable);
    co_await send_json(conn, headers, http::status::ok, std::move(text), kPrometheusContentType);
  } else if (path == "/admin/usage") {
    co_await usage_report(req, conn, headers);
  } else if (path == kCacheFlush) {
    co_await cache_flush(config, req, conn, headers);
  } else if (path == kRollouts) {
    co_await send_json(conn, headers, http::status::ok, rollouts_());
  } else if (path == kAudit) {
    co_await audit_list(req, conn, headers);
  } else if (path == kConfigVersions) {
    co_await send_json(conn, headers, http::status::ok, config_.versions_json());
  } else if (path == kConfig && req.method() != http::verb::post) {
    co_await send_json(conn, headers, http::status::ok, config_.current_text(), "application/yaml");
  } else if (path == kConfig || path == kConfigRollback) {
    co_await config_change(path, req, conn, headers);
  } else if (dashboard_path(path)) {
    co_await send_dashboard_asset(path, conn, headers);
  } else if (auto tenant = runtime->tenants.authenticate(req["authorization"]); !tenant) {  // /v1/models[/{model}]
    co_await send_error(conn, tenant.error(), headers);
  } else if (path == "/v1/models") {
    std::string body = models_body(config);
    co_await send_json(conn, headers, http::status::ok, std::move(body));
  } else {
    co_await model_info(config, path.substr(kModelPrefix.size()), conn, headers);
  }
}

Task<void> AdminRoutes::model_info(const Config& config, std::string_view encoded, ClientConnection& conn,
                                   const Headers& headers) {
  // Clients put a model's name in the path as it is ("org/name") or with
  // its '/' encoded (%2F).
  const std::optional<std::string> name = percent_decoded(encoded);
  const bool served = name && std::ranges::any_of(config.models, [&](const auto& m) { return m.name == *name; });
  const auto adapter = name ? std::ranges::find(config.adapters, *name, &AdapterConfig::name) : config.adapters.end();
  if (!served && adapter != config.adapters.end()) {
    co_await send_json(conn, headers, http::status::ok, boost::json::serialize(adapter_object(*adapter)));
    co_return;
  }
  if (!served) {
    const std::string shown = name.value_or(std::string(encoded));
    const ApiError err{ErrorCode::kModelNotFound, "the model '" + shown + "' does not exist", "model", {}};
    co_await send_error(conn, err, headers);
    co_return;
  }
  std::string body = boost::json::serialize(model_object(*name));
  co_await send_json(conn, headers, http::status::ok, std::move(body));
}

namespace {

// "2026-12-06T22:00:00.123Z".
std::string format_wall_time_ms(std::chrono::system_clock::time_point t) {
  const auto second = std::chrono::floor<std::chrono::seconds>(t);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - second).count();
  std::string text = format_wall_time(second);  // ends in 'Z'
  text.insert(text.size() - 1, fmt::format(".{:03}", ms));
  return text;
}

}  // namespace

Task<void> AdminRoutes::audit_list(HttpRequest& req, ClientConnection& conn, const Headers& headers) {
  const std::string_view target = req.target();
  const std::size_t mark = target.find('?');
  const std::string_view query = mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1);
  int limit = 50;
  if (!query.empty()) {
    const std::string_view value = query.starts_with("limit=") ? query.substr(6) : std::string_view();
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
    if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || limit < 1 || limit > 1000) {
      const ApiError err{ErrorCode::kInvalidRequest, "the query must be limit=N, N in [1, 1000]", "limit", {}};
      co_await send_error(conn, err, headers);
      co_return;
    }
  }
  // The store is read on render_'s thread: an I/O thread never waits on it.
  auto read = [this, limit]() -> Task<AuditRows> { co_return audit_(limit); };
  const AuditRows rows = co_await net::co_spawn(render_.get_executor(), read(), net::use_awaitable);
  if (!rows) {
    const ApiError err{ErrorCode::kNotFound, rows.error(), {}, {}};
    co_await send_error(conn, err, headers);
    co_return;
  }
  boost::json::array data;
  for (const store::AuditRow& r : *rows) {
    const auto ts = std::chrono::system_clock::time_point(std::chrono::milliseconds(r.ts_ms));
    data.push_back({{"ts", format_wall_time_ms(ts)},
                    {"kind", r.kind},
                    {"request_id", r.request_id},
                    {"tenant", r.tenant},
                    {"class", r.klass},
                    {"model", r.model},
                    {"reason", r.detail}});
  }
  std::string body = boost::json::serialize(boost::json::object{{"object", "list"}, {"data", std::move(data)}});
  co_await send_json(conn, headers, http::status::ok, std::move(body));
}

Task<std::string> AdminRoutes::metrics_text() {
  refresh_();
  co_return metrics_.registry.render();
}

Task<void> AdminRoutes::cache_flush(const Config& config, HttpRequest& req, ClientConnection& conn,
                                    const Headers& headers) {
  const std::string_view target = req.target();
  const std::size_t mark = target.find('?');
  std::string model;
  if (mark != std::string_view::npos) {
    const std::string_view query = target.substr(mark + 1);
    const auto decoded = query.starts_with("model=") ? percent_decoded(query.substr(6)) : std::nullopt;
    const bool served =
        decoded && std::ranges::any_of(config.models, [&](const auto& m) { return m.name == *decoded; });
    if (!served) {
      const ApiError err{ErrorCode::kInvalidRequest, "the query must be model=NAME, a model served here", "model", {}};
      co_await send_error(conn, err, headers);
      co_return;
    }
    model = *decoded;
  }
  std::string body = co_await flush_cache_(std::move(model));
  co_await send_json(conn, headers, http::status::ok, std::move(body));
}

Task<void> AdminRoutes::usage_report(HttpRequest& req, ClientConnection& conn, const Headers& headers) {
  const std::string_view target = req.target();
  const std::size_t mark = target.find('?');
  const std::string_view query_text = mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1);
  const auto query = parse_usage_query(query_text, std::chrono::system_clock::now());
  if (!query) {
    const ApiError err{ErrorCode::kInvalidRequest, query.error(), {}, {}};
    co_await send_error(conn, err, headers);
    co_return;
  }
  const std::vector<usage::ReportRow> rows = usage_.report(query->from, query->to, query->group_by);
  const bool csv = query->format == UsageQuery::Format::kCsv;
  std::string body = csv ? usage_csv(*query, rows) : usage_json(*query, rows);
  const std::string_view type = csv ? "text/csv; charset=utf-8" : "application/json";
  co_await send_json(conn, headers, http::status::ok, std::move(body), type);
}

std::string AdminRoutes::models_body(const Config& config) {
  // In configuration order, each model once however many pools serve it.
  boost::json::array data;
  std::unordered_set<std::string_view> listed;
  for (const auto& m : config.models) {
    if (!listed.insert(m.name).second) continue;
    data.push_back(model_object(m.name));
  }
  for (const AdapterConfig& a : config.adapters) data.push_back(adapter_object(a));
  return boost::json::serialize(boost::json::object{{"object", "list"}, {"data", std::move(data)}});
}

Task<void> AdminRoutes::config_change(std::string_view path, HttpRequest& req, ClientConnection& conn,
                                      const Headers& headers) {
  ReloadOutcome outcome;
  if (path == kConfig) {
    outcome = config_.reload(std::move(req.body()), "admin");
  } else {
    const std::string_view target = req.target();
    const std::size_t mark = target.find('?');
    const std::string_view query = mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1);
    if (!query.starts_with("version=")) {
      const ApiError err{ErrorCode::kInvalidRequest,
                         "the query must be version=HASH (GET /admin/config/versions lists them)", "version", {}};
      co_await send_error(conn, err, headers);
      co_return;
    }
    outcome = config_.rollback(query.substr(8));
  }
  boost::json::object body{{"hash", outcome.hash}};
  http::status status = http::status::ok;
  switch (outcome.result) {
    case ReloadOutcome::Result::kApplied:
      body["result"] = "applied";
      body["carried"] = {{"queued", outcome.carried.queued},
                         {"running", outcome.carried.running},
                         {"dropped_queued", outcome.carried.dropped_queued},
                         {"orphaned_running", outcome.carried.orphaned_running}};
      break;
    case ReloadOutcome::Result::kUnchanged:
      body["result"] = "unchanged";
      break;
    case ReloadOutcome::Result::kRejected: {
      // The OpenAI error shape, and every reason listed as --check lists them.
      status = http::status::bad_request;
      boost::json::array errors;
      for (const std::string& e : outcome.errors) errors.emplace_back(e);
      body["result"] = "rejected";
      body["error"] = {{"message", "config rejected; the running config is unchanged: " +
                                       (outcome.errors.empty() ? std::string() : outcome.errors.front())},
                       {"type", "invalid_request_error"},
                       {"code", "config_rejected"},
                       {"param", nullptr}};
      body["errors"] = std::move(errors);
      break;
    }
  }
  co_await send_json(conn, headers, status, boost::json::serialize(body));
}

}  // namespace arbiter
