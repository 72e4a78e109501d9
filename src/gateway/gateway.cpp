#include "gateway/gateway.hpp"

#include <stdexcept>

#include "gateway/admin/state_export.hpp"
#include "gateway/handler/dispatch_handler.hpp"
#include "gateway/relay/upstream_relay.hpp"
#include "gateway/request_id.hpp"
#include "gateway/scheduler_setup.hpp"
#include "gateway/pipeline_registry.hpp"
#include "gateway/stages/quota/quota_export.hpp"

namespace arbiter {

namespace {

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

}  // namespace

Gateway::Gateway(Config config, std::size_t io_threads, net::any_io_executor timer_executor,
                 std::unique_ptr<BatchedLineWriter> access_log)
    : startup_(std::make_shared<const Runtime>(std::move(config))),
      runtime_(startup_),
      config_(startup_->config),
      tenants_(startup_->tenants),
      quotas_(config_, timer_executor, metrics_.registry),
      usage_(config_),
      pool_index_(startup_->pool_index),
      access_log_(std::move(access_log)),
      cors_(config_.cors) {
  for (std::size_t i = 0; i < config_.models.size(); ++i) {
    pools_.push_back(std::make_unique<ModelPool>(config_.models[i], io_threads));
  }
  auto scheduler = sched::Scheduler::create(to_scheduler_config(config_));
  // The config loader validated the same rules: failing here is a bug.
  if (!scheduler) throw std::logic_error("scheduler config: " + scheduler.error());
  for (std::size_t p = 0; p < pools_.size(); ++p) {
    for (const sched::PoolId lender : scheduler->config().pools[p].lenders) {
      pools_[p]->also_runs_on(config_.models[lender]);
    }
  }
  dispatcher_ = std::make_unique<Dispatcher>(std::move(*scheduler), timer_executor);
  dispatcher_->start();
  breakers_ = std::make_unique<ModelBreakers>(config_, metrics_.registry);
  overload_ = std::make_unique<OverloadControl>(config_, degrade_actions(config_), *dispatcher_, metrics_.registry);
  cache_ = std::make_unique<ResultCache>(config_.cache, metrics_.registry, timer_executor);
  health_ = std::make_unique<BackendHealth>(config_, *dispatcher_, timer_executor, metrics_);
  // Pool p serves model config_.models[p]: its breaker's index by name.
  std::vector<std::size_t> breaker_of;
  for (const ModelConfig& m : config_.models) breaker_of.push_back(*breakers_->index(m.name));
  if (config_.health_probes.enabled) {
    health_->set_breaker_hooks(
        [this, breaker_of](uint32_t pool) { return breakers_->waiting_open(breaker_of[pool], sched::Clock::now()); },
        [this, breaker_of](uint32_t pool) { breakers_->backend_recovered(breaker_of[pool], sched::Clock::now()); });
  }
  health_->start();
  if (config_.engine_signals.enabled) start_monitor(timer_executor);
  quotas_.start();
  dynamic_quotas_ = std::make_unique<DynamicQuotaUpdater>(config_, quotas_, usage_);
  dynamic_quotas_->start(timer_executor);
  if (!config_.quota_store.redis.empty()) {
    service_exchange_ = std::make_unique<ServiceExchange>(config_, pool_index_, *dispatcher_, timer_executor);
    service_exchange_->start();
  }
  admin_ = std::make_unique<AdminRoutes>(config_, tenants_, metrics_, usage_, [this] { refresh_metrics(); },
                                         [this](std::string model) { return cache_->flush(std::move(model)); });
  refusals_ = std::make_unique<RefusalLog>(metrics_, access_log_.get());
  assemble_pipeline();
}

Gateway::~Gateway() {
  if (monitor_) monitor_->stop();
  health_->stop();
  dispatcher_->stop();
  quotas_.stop();
  dynamic_quotas_->stop();
  if (service_exchange_) service_exchange_->stop();
}

// The inference routes' chain, from the registry (gateway/pipeline_registry):
// each stage in its phase's place, then the handler and the observers.
void Gateway::assemble_pipeline() {
  pipeline_.set_runtime(runtime_);
  if (cors_.enabled()) pipeline_.set_cors(cors_);
  const PipelineParts parts{.config = config_,
                            .pools = pools_,
                            .metrics = metrics_,
                            .breakers = *breakers_,
                            .overload = *overload_,
                            .quotas = quotas_,
                            .cache = *cache_,
                            .usage = usage_,
                            .access_log = access_log_.get()};
  for (const StageEntry& stage : stage_registry()) pipeline_.add_stage(stage.make(parts));
  pipeline_.set_handler(std::make_unique<DispatchHandler>(config_, *dispatcher_, pools_, *health_, metrics_));
  for (const ObserverEntry& observer : observer_registry()) {
    if (!observer.enabled(config_)) continue;
    if (auto made = observer.make(parts)) pipeline_.add_observer(std::move(made));
  }
}

void Gateway::start_monitor(net::any_io_executor executor) {
  std::vector<MonitorTarget> targets;
  for (std::size_t p = 0; p < config_.models.size(); ++p) {
    const auto& backends = config_.models[p].backends;
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
  options.interval = config_.engine_signals.interval;
  options.rules.stale_after = config_.engine_signals.stale_after;
  options.rules.silence_before_down = config_.engine_signals.silence_before_down;
  options.rules.kv_threshold = config_.engine_signals.kv_saturation;
  // Verdicts go to the scheduler through BackendHealth (which adds outlier
  // ejection): a saturated backend takes no new dispatch, a stale one falls
  // back to its concurrency limit.
  // Adaptive capacity and the load coefficient decide at every judgement, changed or not.
  if (config_.any_adaptive_capacity()) {
    capacity_ = std::make_unique<BackendCapacity>(config_, *dispatcher_, pools_, *health_, metrics_,
                                                  sched::Clock::now());
  }
  SignalCallback on_judged = [this](uint32_t pool, uint32_t backend, const sched::BackendSignal& signal,
                                    const EngineLoad& load) {
    const auto now = sched::Clock::now();
    if (capacity_) capacity_->observe(pool, backend, signal, load, now);
    overload_->observe(pool, backend, signal, load, now);
  };
  monitor_ = std::make_unique<BackendMonitor>(
      executor, std::move(targets), options,
      [this](uint32_t pool, uint32_t backend, const sched::BackendSignal& signal, const EngineLoad& load) {
        health_->on_signal(pool, backend, signal);
        // prefix_cache_tokens: auto takes the engine's KV size when it reports one.
        if (load.kv_cache_tokens && config_.models[pool].backends[backend].prefix_cache_from_engine) {
          dispatcher_->set_prefix_cache(pool, backend, *load.kv_cache_tokens);
        }
      },
      std::move(on_judged));
  monitor_->start();
}

void Gateway::refresh_metrics() {
  dispatcher_->inspect([this](const sched::Scheduler& s) { export_scheduler_state(s, config_, pool_index_, metrics_, shown_tenant_queues_); });
  if (monitor_) export_monitor_state(*monitor_, config_, metrics_);
  health_->export_state();
  breakers_->export_state(sched::Clock::now());
  export_quota_state(quotas_);
  if (service_exchange_) metrics_.service_exchanges.set(service_exchange_->exchanges());
  if (access_log_) metrics_.access_log_dropped.set(access_log_->dropped());
}

Task<void> Gateway::handle(HttpRequest& req, ClientConnection& conn) {
  // Not a coroutine itself: it picks the one that answers (a frame fewer
  // per request). `path` views the request, which outlives the answer.
  const std::string_view path = path_of(req.target());
  const auto route = route_from_path(path);
  if (route && req.method() == http::verb::post) return pipeline_.run(*route, req, conn);
  // The public port does not know the operator's routes (/metrics, /admin/*):
  // they are the admin listener's alone.
  const bool admin = AdminRoutes::serves(path) && !AdminRoutes::operator_only(path);
  if (req.method() == http::verb::options && cors_.enabled() && (route || admin)) {
    return answer_preflight(req, conn, route ? "POST" : "GET, HEAD");
  }
  return answer_get(req, conn, path, route.has_value(), admin);
}

Task<void> Gateway::handle_admin(HttpRequest& req, ClientConnection& conn) {
  const std::string_view path = path_of(req.target());
  // Only the admin routes it knows: an unknown /admin/* path is 404.
  const bool admin = AdminRoutes::serves(path) && (AdminRoutes::operator_only(path) || path == "/healthz" || path == "/readyz");
  co_await answer_get(req, conn, path, false, admin);
}

void Gateway::note_route_refusal(const HttpRequest& req, const ApiError& err, std::string_view reason) {
  refusals_->record(HttpRefusal{.status = err.status(), .reason = reason, .target = req.target()});
}

Task<void> Gateway::answer_preflight(HttpRequest& req, ClientConnection& conn, std::string_view methods) {
  // A browser's CORS preflight: may a page of this origin send that method
  // with those headers? 200 with the permission (as Envoy's CORS filter; any
  // 2xx will do), or 403 saying why not.
  const std::string request_id = choose_request_id(req["x-request-id"]);
  auto allowed = cors_.preflight(req["origin"], req["access-control-request-method"],
                                 req["access-control-request-headers"], methods);
  if (!allowed) {
    const std::vector<std::pair<std::string, std::string>> headers{{"x-request-id", request_id}};
    const ApiError refused{ErrorCode::kForbidden, "cross-origin request refused: " + allowed.error(), {}, {}};
    co_await send_error(conn, refused, headers);
    co_return;
  }
  http::response<http::string_body> res{http::status::ok, 11};
  res.set("x-request-id", request_id);
  for (const auto& [name, value] : *allowed) res.set(name, value);
  co_await conn.send(res);
}

Task<void> Gateway::answer_get(HttpRequest& req, ClientConnection& conn, std::string_view path, bool inference,
                               bool admin) {
  // Everything but inference answers with the request's id too.
  std::vector<std::pair<std::string, std::string>> headers{{"x-request-id", choose_request_id(req["x-request-id"])}};
  cors_.add_answer_headers(req["origin"], headers);
  // HEAD: the GET's head alone (RFC 9110 9.3.2; load balancers probe with
  // it). Every one of these routes answers whole, never a stream.
  const bool head = req.method() == http::verb::head;
  if (admin && AdminRoutes::accepts(path, req.method())) {
    if (head) conn.set_head_only();
    co_await admin_->handle(path, req, conn, headers);
    co_return;
  }
  if (inference || admin) {
    // Named locals, not braced temporaries, in co_await expressions: GCC 12
    // miscompiles some of those ("array used as initializer").
    const bool post = inference || path == AdminRoutes::kCacheFlush;
    const std::string_view allowed = post ? (cors_.enabled() ? "POST, OPTIONS" : "POST")
                                          : (cors_.enabled() ? "GET, HEAD, OPTIONS" : "GET, HEAD");
    const ApiError err{ErrorCode::kMethodNotAllowed, "use " + std::string(allowed) + " for " + std::string(path), {}, {}};
    headers.emplace_back("allow", allowed);
    note_route_refusal(req, err, "method_not_allowed");
    co_await send_error(conn, err, headers);
    co_return;
  }
  const ApiError not_found{ErrorCode::kNotFound,
                           "no route for " + std::string(req.method_string()) + " " + std::string(path),
                           {}, {}};
  note_route_refusal(req, not_found, "no_route");
  co_await send_error(conn, not_found, headers);
}

}  // namespace arbiter
