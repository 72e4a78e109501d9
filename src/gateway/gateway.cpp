#include "gateway/gateway.hpp"

#include <boost/json.hpp>

#include "core/request_parser.hpp"
#include "gateway/request_id.hpp"
#include "gateway/upstream_relay.hpp"

namespace arbiter {

namespace {

using Clock = std::chrono::steady_clock;
using Headers = std::vector<std::pair<std::string, std::string>>;

// Label values for requests that never got that far: bounded cardinality
// (a client's made-up model name never becomes a label).
constexpr std::string_view kNoLabel = "none";
constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

double ms_since(Clock::time_point t, Clock::time_point now = Clock::now()) {
  return std::chrono::duration<double, std::milli>(now - t).count();
}

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

// Everything known about a request once it is admitted.
struct Admission {
  const TenantConfig* tenant = nullptr;
  ParsedRequest parsed;
  const ClassConfig* cls = nullptr;
  bool capped = false;  // the class cap rewrote max_tokens
};

}  // namespace

Gateway::Gateway(Config config, std::size_t io_threads)
    : config_(std::move(config)),
      tenants_(config_.tenants, config_.auth.enabled),
      classifier_(config_.classes, config_.default_class),
      access_log_(config_.log.access_log) {
  for (const auto& m : config_.models) {
    pools_.emplace(m.name, std::make_unique<ModelPool>(m, metrics_, io_threads));
  }
}

std::string Gateway::models_body() const {
  boost::json::array data;
  for (const auto& m : config_.models) {
    data.push_back(boost::json::object{
        {"id", m.name}, {"object", "model"}, {"created", 0}, {"owned_by", "arbiter"}});
  }
  return boost::json::serialize(boost::json::object{{"object", "list"}, {"data", std::move(data)}});
}

Task<void> Gateway::send_json(ClientConnection& conn, http::status status, std::string body,
                              std::string_view content_type) {
  http::response<http::string_body> res{status, 11};
  res.set(http::field::content_type, content_type);
  res.body() = std::move(body);
  co_await conn.send(res);
}

Task<void> Gateway::handle(HttpRequest& req, ClientConnection& conn) {
  const std::string_view path = path_of(req.target());
  if (auto route = route_from_path(path)) {
    if (req.method() == http::verb::post) {
      co_await handle_inference(*route, req, conn);
    } else {
      // Named locals, not braced temporaries, in co_await expressions: GCC 12
      // miscompiles some of those ("array used as initializer").
      const ApiError err{ErrorCode::kMethodNotAllowed, "use POST for " + std::string(path), {}, {}};
      const Headers allow{{"allow", "POST"}};
      co_await send_error(conn, err, allow);
    }
    co_return;
  }
  if (req.method() == http::verb::get) {
    if (path == "/healthz") {
      std::string body = R"({"status":"ok"})";
      co_await send_json(conn, http::status::ok, std::move(body));
      co_return;
    }
    if (path == "/readyz") {
      const bool ready = ready_.load();
      const auto status = ready ? http::status::ok : http::status::service_unavailable;
      std::string body = ready ? R"({"status":"ready"})" : R"({"status":"not ready"})";
      co_await send_json(conn, status, std::move(body));
      co_return;
    }
    if (path == "/metrics") {
      std::string text = metrics_.registry.render();
      co_await send_json(conn, http::status::ok, std::move(text), kPrometheusContentType);
      co_return;
    }
    if (path == "/v1/models") {
      if (auto tenant = tenants_.authenticate(req[http::field::authorization]); !tenant) {
        const Headers none;
        co_await send_error(conn, tenant.error(), none);
      } else {
        std::string body = models_body();
        co_await send_json(conn, http::status::ok, std::move(body));
      }
      co_return;
    }
  }
  const ApiError not_found{ErrorCode::kNotFound,
                          "no route for " + std::string(req.method_string()) + " " + std::string(path),
                          {}, {}};
  const Headers none;
  co_await send_error(conn, not_found, none);
}

Task<void> Gateway::handle_inference(Route route, HttpRequest& req, ClientConnection& conn) {
  const auto started = Clock::now();
  AccessRecord rec;
  rec.ts = std::chrono::system_clock::now();
  rec.route = route_path(route);
  rec.bytes_in = req.body().size();
  rec.request_id = choose_request_id(req["x-request-id"]);
  rec.tenant = kAnonymousTenant;
  rec.model = kNoLabel;
  rec.cls = kNoLabel;
  metrics_.in_flight.add(1);
  Headers headers{{"x-request-id", rec.request_id}};

  // Admission: auth before anything is parsed, then body, model, class, caps.
  ModelPool* pool = nullptr;
  auto admit = [&]() -> std::expected<Admission, ApiError> {
    Admission a;
    auto tenant = tenants_.authenticate(req[http::field::authorization]);
    if (!tenant) return std::unexpected(tenant.error());
    a.tenant = *tenant;
    if (a.tenant) rec.tenant = a.tenant->name;
    auto parsed = parse_request(route, req.body());
    if (!parsed) return std::unexpected(parsed.error());
    a.parsed = std::move(*parsed);
    rec.stream = a.parsed.info.stream;
    auto it = pools_.find(a.parsed.info.model);
    if (it == pools_.end()) {
      return std::unexpected(ApiError{ErrorCode::kModelNotFound,
                                      "the model '" + a.parsed.info.model + "' does not exist",
                                      "model", {}});
    }
    pool = it->second.get();
    rec.model = a.parsed.info.model;
    std::optional<std::string_view> claimed;
    if (auto h = req.find("x-arbiter-class"); h != req.end()) claimed = h->value();
    auto cls = classifier_.classify({.route = route,
                                     .model = a.parsed.info.model,
                                     .tenant = a.tenant,
                                     .claimed = claimed,
                                     .max_tokens = a.parsed.info.max_tokens});
    if (!cls) return std::unexpected(cls.error());
    a.cls = &config_.classes[*cls];
    rec.cls = a.cls->name;
    if (a.cls->max_tokens_cap) a.capped = apply_max_tokens_cap(a.parsed, *a.cls->max_tokens_cap);
    return a;
  };

  RelayOutcome outcome;
  std::string backend_name;
  auto admission = admit();
  if (!admission) {
    outcome.error = admission.error();
  } else if (auto lease = pool->acquire(); !lease) {
    outcome.error = ApiError{ErrorCode::kNoBackend,
                             "every backend of model '" + rec.model + "' is at its concurrency limit",
                             {}, kDefaultRetryAfter};
  } else {
    if (admission->capped) metrics_.rewrites.with({rec.cls}).inc();
    const BackendConfig& backend = pool->backend(lease->backend());
    backend_name = backend.name;
    rec.backend = backend.name;
    rec.queue_ms = ms_since(started);
    headers.emplace_back("x-arbiter-class", rec.cls);
    headers.emplace_back("x-arbiter-backend", backend.name);
    headers.emplace_back("x-arbiter-queue-ms", std::to_string(static_cast<int64_t>(rec.queue_ms)));

    http::request<http::string_body> up{http::verb::post, route_path(route), 11};
    up.set(http::field::host, backend.host + ":" + std::to_string(backend.port));
    up.set(http::field::content_type, "application/json");
    up.set("x-request-id", rec.request_id);
    if (auto accept = req.find(http::field::accept); accept != req.end()) {
      up.set(http::field::accept, accept->value());
    }
    up.keep_alive(true);
    up.body() = admission->capped ? boost::json::serialize(admission->parsed.body)
                                  : std::move(req.body());
    up.prepare_payload();

    const RelayRequest relay_request{.pool = pool->upstream(lease->backend()),
                                     .upstream_request = up,
                                     .client = conn,
                                     .timeouts = config_.timeouts,
                                     .limits = config_.limits,
                                     .response_headers = headers};
    outcome = co_await relay(relay_request);
  }
  if (outcome.error && outcome.status == 0) {
    // Refused before any upstream exchange.
    const bool delivered = co_await send_error(conn, *outcome.error, headers);
    outcome.status = delivered ? outcome.error->status() : 499;
  }

  // Accounting: exactly once per request, whatever path it took.
  const auto now = Clock::now();
  rec.status = outcome.status;
  rec.bytes_out = conn.body_bytes_sent();
  rec.upstream_ms = outcome.upstream_ms;
  rec.duration_ms = ms_since(started, now);
  if (auto first = conn.first_body_byte_at()) rec.ttfb_ms = ms_since(started, *first);
  if (outcome.error) rec.error = map_error(outcome.error->code).code;
  metrics_.requests.with({rec.model, rec.cls, rec.tenant, std::to_string(rec.status)}).inc();
  metrics_.duration.with({rec.model, rec.cls}).observe(rec.duration_ms / 1000.0);
  if (rec.ttfb_ms >= 0) metrics_.first_byte.with({rec.model, rec.cls}).observe(rec.ttfb_ms / 1000.0);
  if (rec.status == 499) metrics_.cancelled.with({rec.model, rec.cls}).inc();
  if (!outcome.upstream_error.empty()) {
    metrics_.upstream_errors.with({backend_name, outcome.upstream_error}).inc();
  }
  if (outcome.retried) metrics_.upstream_retries.with({backend_name}).inc();
  metrics_.in_flight.sub(1);
  access_log_.write(rec);
}

}  // namespace arbiter
