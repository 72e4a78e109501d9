#include "gateway/gateway.hpp"

#include <algorithm>
#include <stdexcept>

#include <boost/json.hpp>

#include "gateway/config_yaml.hpp"
#include "gateway/store/database.hpp"
#include "gateway/config_change.hpp"
#include "gateway/request_id.hpp"
#include "gateway/stages/quota/quota_export.hpp"
#include "observability/event_log.hpp"

namespace arbiter {

namespace {

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// Its Runtime, sharing the generation's count: holding it keeps the whole
// generation (the pipeline running a request) alive.
std::shared_ptr<const Runtime> runtime_of(std::shared_ptr<Generation> generation) {
  const Runtime* runtime = &generation->runtime();
  return {std::move(generation), runtime};
}

// One request of `route` through `generation`'s pipeline (not a coroutine:
// no frame of its own).
Task<void> run_pipeline(Route route, HttpRequest& req, RequestClient& client, std::shared_ptr<Generation> generation) {
  const Pipeline& pipeline = generation->pipeline();
  return pipeline.run(route, req, client, runtime_of(std::move(generation)));
}

}  // namespace

namespace {

// A retired generation's loops may still be in their last step (a health
// probe waits up to its timeout): it is freed no sooner than this after.
std::chrono::steady_clock::duration retire_grace(const Config& config) {
  return config.health_probes.timeout + std::chrono::seconds(5);
}

}  // namespace

Gateway::Gateway(Config config, std::string text, std::string source, std::size_t io_threads,
                 net::any_io_executor timer_executor, std::unique_ptr<BatchedLineWriter> access_log,
                 std::unique_ptr<StoreWriter> store, std::optional<BatchPlace> batches)
    : startup_config_(config),
      quotas_(startup_config_, timer_executor, metrics_.registry),
      usage_(startup_config_),
      cache_(std::make_unique<ResultCache>(startup_config_.cache, metrics_.registry, timer_executor)),
      rollouts_(metrics_.registry),
      access_log_(std::move(access_log)),
      refusals_(std::make_unique<RefusalLog>(metrics_, access_log_.get())),
      store_(std::move(store)),
      timer_executor_(timer_executor),
      io_threads_(io_threads),
      generation_(nullptr),
      versions_(ConfigVersion{.hash = config_hash(text),
                              .applied_at = std::chrono::system_clock::now(),
                              .source = std::move(source),
                              .text = std::move(text)}) {
  if (store_) start_store(config.store);
  if (!config.tracing.endpoint.empty()) {
    traces_ = std::make_unique<TraceExporter>(config.tracing, timer_executor, metrics_.registry);
    traces_->start();
  }
  rollouts_.configure(config.aliases, std::chrono::steady_clock::now());
  auto first = std::make_shared<Generation>(std::move(config), versions_.current().hash, generation_deps());
  dispatcher_ = std::make_unique<Dispatcher>(first->make_scheduler(), first, timer_executor);
  dispatcher_->start();
  first->start(*dispatcher_, dispatcher_->epoch());
  generation_.store(first);
  quotas_.start();
  admin_ = std::make_unique<AdminRoutes>(
      [this] { return runtime_of(generation_.load()); },
      metrics_, usage_, [this] { refresh_metrics(); },
      [this](std::string model) { return cache_->flush(std::move(model)); }, *this,
      [this] { return rollouts_.report_json(std::chrono::steady_clock::now()); },
      [this](int limit) -> AdminRoutes::AuditRows {
        if (!store_ || !store_->audit()) return std::unexpected("the audit trail is off (store.enabled, store.audit)");
        return store_->recent_audit(limit);
      });
  {
    std::lock_guard lock(reload_mu_);
    show_version_locked();
  }
  if (batches) start_batches(*batches);
  metrics_.config_generations.set(1);
  // Every second: replaced generations freed, canaries judged.
  retire_sweep_.start(timer_executor_, std::chrono::seconds(1), [this]() -> Task<void> {
    sweep_retired();
    judge_canaries();
    co_return;
  });
}

Gateway::~Gateway() {
  if (batches_) batches_->stop();
  if (traces_) traces_->stop();
  retire_sweep_.stop();
  generation_.load()->stop();
  dispatcher_->stop();
  quotas_.stop();
  {
    std::lock_guard lock(reload_mu_);
    for (Retired& r : retired_) r.generation->stop();
  }
  if (store_) {
    set_event_tap(nullptr);
    store_->stop();  // what is queued is written (or stays journaled for the next start)
  }
}

void Gateway::start_store(const StoreConfig& settings) {
  store_metrics_ = std::make_unique<StoreMetrics>(metrics_.registry);
  // The ledger from the store: /admin/usage and the dynamic quotas'
  // history survive a restart.
  const auto since = std::chrono::system_clock::now() - settings.retention;
  const auto from_ms = std::chrono::duration_cast<std::chrono::milliseconds>(since.time_since_epoch()).count();
  const StoreWriter::UsageHistory history = store_->usage_since(from_ms);
  if (history.store_error) log_event(EventLevel::kWarn, "store_read_failed", {{"detail", *history.store_error}});
  usage_.seed(history.hours);
  if (store_->audit()) {
    audit_tap_ = EventTap{
        .kinds = {"model_breaker", "backend_health", "degradation_stage", "traffic_breaker", "config_applied",
                  "config_rejected", "canary_rolled_back", "canary_promoted", "quota_store_down", "quota_store_up"},
        .take = [this](std::string_view event, std::string_view fields) {
          const auto now = std::chrono::system_clock::now().time_since_epoch();
          store_->add(store::AuditRow{.ts_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count(),
                                      .kind = std::string(event),
                                      .detail = std::string(fields)});
        }};
    set_event_tap(&audit_tap_);
  }
  store_->start();
}

void Gateway::start_batches(const BatchPlace& place) {
  auto current_runtime = [this] { return runtime_of(generation_.load()); };
  // A line runs as a client's request does (handle()), on the timer strand.
  auto run_line = [this](Route route, HttpRequest& req, RequestClient& client) {
    return run_pipeline(route, req, client, generation_.load());
  };
  auto opened = batch::BatchBook::open(place.dir, place.store, store::replica_name(place.store), timer_executor_,
                                       std::move(run_line), std::move(current_runtime), metrics_.registry);
  if (!opened) {
    // Inference goes on: only the Batch API answers 500 saying why (a config
    // folder mounted read-only must not stop a gateway that upgraded).
    batches_error_ = "the Batch API's folder (batches.dir) or records (the store) cannot be used: " + opened.error();
    log_event(EventLevel::kError, "batches_unavailable", {{"detail", batches_error_}});
    return;
  }
  batches_ = std::move(*opened);
  batch_routes_ = std::make_unique<batch::BatchRoutes>(*batches_);
  batches_->start();
}

GenerationDeps Gateway::generation_deps() {
  return {.metrics = metrics_,
          .quotas = quotas_,
          .usage = usage_,
          .cache = *cache_,
          .rollouts = rollouts_,
          .access_log = access_log_.get(),
          .store = store_.get(),
          .traces = traces_.get(),
          .io_threads = io_threads_,
          .timer_executor = timer_executor_};
}

ReloadOutcome Gateway::reload(std::string text, std::string source) {
  auto parsed = parse_config(text);
  if (!parsed) {
    metrics_.config_reloads.with({"rejected"}).inc();
    ReloadOutcome rejected{.result = ReloadOutcome::Result::kRejected, .hash = {}, .errors = std::move(parsed.error()), .carried = {}};
    log_event(EventLevel::kWarn, "config_rejected", {{"source", source}, {"errors", rejected.errors.size()},
                                                     {"first", rejected.errors.empty() ? std::string() : rejected.errors.front()}});
    std::lock_guard lock(reload_mu_);
    rejected.hash = versions_.current().hash;
    return rejected;
  }
  std::lock_guard lock(reload_mu_);
  return apply_locked(std::move(*parsed), std::move(text), std::move(source));
}

ReloadOutcome Gateway::rollback(std::string_view hash) {
  std::string text;
  {
    std::lock_guard lock(reload_mu_);
    const ConfigVersion* version = versions_.find(hash);
    if (version == nullptr) {
      metrics_.config_reloads.with({"rejected"}).inc();
      return {.result = ReloadOutcome::Result::kRejected,
              .hash = versions_.current().hash,
              .errors = {"no kept version has the hash '" + std::string(hash) +
                         "' (GET /admin/config/versions lists them; 6 digits at least)"},
              .carried = {}};
    }
    text = version->text;
  }
  return reload(text, "rollback:" + std::string(hash));
}

ReloadOutcome Gateway::apply_locked(Config next, std::string text, std::string source) {
  const std::string hash = config_hash(text);
  auto reject = [&](std::vector<std::string> errors) {
    metrics_.config_reloads.with({"rejected"}).inc();
    log_event(EventLevel::kWarn, "config_rejected",
              {{"source", source}, {"errors", errors.size()}, {"first", errors.front()}});
    return ReloadOutcome{.result = ReloadOutcome::Result::kRejected,
                         .hash = versions_.current().hash,
                         .errors = std::move(errors),
                         .carried = {}};
  };
  if (hash == versions_.current().hash) {
    metrics_.config_reloads.with({"unchanged"}).inc();
    return {.result = ReloadOutcome::Result::kUnchanged, .hash = hash, .errors = {}, .carried = {}};
  }
  if (prepare_) {
    if (auto why = prepare_(next)) return reject({*why});
  }
  const PrintedConfig printed(next);  // printed once for every comparison below
  std::vector<std::string> restart = restart_only_changes(PrintedConfig(startup_config_), printed);
  if (!restart.empty()) {
    for (std::string& key : restart) key += ": changed; only a restart applies it (the running config is unchanged)";
    return reject(std::move(restart));
  }
  const std::shared_ptr<Generation> old = generation_.load();
  const CarryMap map = carry_map(old->config(), next);
  const PrintedConfig running(old->config());
  const std::vector<std::string> flushed = changed_models(running, printed);
  Generation::Unchanged unchanged{.models = {},
                                  .breaker_settings = same_section(running, printed, "model_breaker"),
                                  .outlier_settings = same_section(running, printed, "outlier_detection") &&
                                                      same_section(running, printed, "retries"),
                                  .degradation_settings = same_section(running, printed, "degradation"),
                                  .capacity_settings = same_section(running, printed, "adaptive_capacity")};
  for (const ModelConfig& m : next.models) {
    if (std::ranges::find(flushed, m.name) == flushed.end()) unchanged.models.push_back(m.name);
  }
  rollouts_.configure(next.aliases, std::chrono::steady_clock::now());
  auto fresh = std::make_shared<Generation>(std::move(next), hash, generation_deps());
  // The scheduler moves first (under the dispatcher's lock), then new
  // requests go to the new generation; a request its old pipeline admitted
  // meanwhile is translated at its enqueue by the same map.
  auto [epoch, carried] = dispatcher_->reconfigure(fresh->make_scheduler(), map, fresh);
  fresh->start(*dispatcher_, epoch, Generation::Carry{.old = *old, .unchanged = unchanged});
  quotas_.reconfigure(fresh->config());
  generation_.store(fresh);
  old->stop();
  retired_.push_back({old, std::chrono::steady_clock::now() + retire_grace(old->config())});
  metrics_.config_generations.set(static_cast<double>(1 + retired_.size()));
  versions_.applied({.hash = hash, .applied_at = std::chrono::system_clock::now(), .source = source, .text = std::move(text)});
  show_version_locked();
  // A changed model's cached answers came from engines or settings that
  // may no longer give them (the shared store's keys go too).
  for (const std::string& model : flushed) net::co_spawn(timer_executor_, cache_->flush(model), net::detached);
  metrics_.config_reloads.with({"applied"}).inc();
  metrics_.config_carried.with({"queued"}).inc(carried.queued);
  metrics_.config_carried.with({"running"}).inc(carried.running);
  metrics_.config_carried.with({"dropped_queued"}).inc(carried.dropped_queued);
  metrics_.config_carried.with({"orphaned_running"}).inc(carried.orphaned_running);
  log_event(EventLevel::kInfo, "config_applied",
            {{"hash", hash},
             {"source", source},
             {"queued", carried.queued},
             {"running", carried.running},
             {"dropped_queued", carried.dropped_queued},
             {"orphaned_running", carried.orphaned_running}});
  return {.result = ReloadOutcome::Result::kApplied, .hash = hash, .errors = {}, .carried = carried};
}

void Gateway::show_version_locked() {
  const ConfigVersion& current = versions_.current();
  for (const ConfigVersion& v : versions_.previous()) metrics_.config_info.with({v.hash, v.source}).set(0);
  metrics_.config_info.with({current.hash, current.source}).set(1);
  shown_version_ = current.hash;
}

void Gateway::sweep_retired() {
  std::lock_guard lock(reload_mu_);
  const auto now = std::chrono::steady_clock::now();
  // Only the list holds it: no request, dispatch or slot does any more.
  std::erase_if(retired_, [&](const Retired& r) { return now >= r.free_after && r.generation.use_count() == 1; });
  metrics_.config_generations.set(static_cast<double>(1 + retired_.size()));
}

void Gateway::judge_canaries() {
  for (const RolloutBook::Event& e : rollouts_.evaluate(std::chrono::steady_clock::now())) {
    const rollout::Verdict& v = e.verdict;
    const bool rolled_back = v.kind == rollout::Verdict::Kind::kRolledBack;
    auto ms = [](const std::optional<double>& x) { return x ? *x : -1.0; };
    log_event(rolled_back ? EventLevel::kWarn : EventLevel::kInfo, rolled_back ? "canary_rolled_back" : "canary_promoted",
              {{"alias", e.alias},
               {"canary", e.canary},
               {"reason", v.reason},
               {"canary_percent", v.canary_percent},
               {"margin", e.margin},
               {"canary_requests", v.canary.requests},
               {"stable_requests", v.stable.requests},
               {"canary_error_rate", v.canary.error_rate},
               {"stable_error_rate", v.stable.error_rate},
               {"canary_p99_ttft_ms", ms(v.canary.p99_ttft_ms)},
               {"stable_p99_ttft_ms", ms(v.stable.p99_ttft_ms)},
               {"canary_p99_itl_ms", ms(v.canary.p99_itl_ms)},
               {"stable_p99_itl_ms", ms(v.stable.p99_itl_ms)}});
  }
}

std::string Gateway::versions_json() const {
  std::lock_guard lock(reload_mu_);
  boost::json::array list;
  auto add = [&](const ConfigVersion& v, bool running) {
    const auto at = std::chrono::duration_cast<std::chrono::seconds>(v.applied_at.time_since_epoch()).count();
    list.push_back(boost::json::object{{"hash", v.hash}, {"applied_at", at}, {"source", v.source}, {"running", running}});
  };
  add(versions_.current(), true);
  for (const ConfigVersion& v : versions_.previous()) add(v, false);
  return boost::json::serialize(boost::json::object{{"object", "list"}, {"data", std::move(list)}});
}

std::string Gateway::current_text() const {
  std::lock_guard lock(reload_mu_);
  return versions_.current().text;
}

void Gateway::refresh_metrics() {
  generation_.load()->refresh_metrics();
  export_quota_state(quotas_);
  if (store_) store_metrics_->show(store_->state());
  if (access_log_) metrics_.access_log_dropped.set(access_log_->dropped());
}

Task<void> Gateway::handle(HttpRequest& req, ClientConnection& conn) {
  // Not a coroutine itself: it picks the one that answers (a frame fewer
  // per request). `path` views the request, which outlives the answer.
  const std::string_view path = path_of(req.target());
  const auto route = route_from_path(path);
  std::shared_ptr<Generation> generation = generation_.load();  // the request's one atomic load
  if (route && req.method() == http::verb::post) return run_pipeline(*route, req, conn, std::move(generation));
  if ((batch_routes_ || !batches_error_.empty()) && batch::BatchRoutes::serves(path)) {
    return answer_batch(req, conn, path, std::move(generation));
  }
  // The public port does not know the operator's routes (/metrics, /admin/*):
  // they are the admin listener's alone.
  const bool admin = AdminRoutes::serves(path) && !AdminRoutes::operator_only(path);
  if (req.method() == http::verb::options && generation->cors().enabled() && (route || admin)) {
    return answer_preflight(req, conn, route ? "POST" : "GET, HEAD", std::move(generation));
  }
  return answer_get(req, conn, path, route.has_value(), admin, std::move(generation));
}

Task<void> Gateway::handle_admin(HttpRequest& req, ClientConnection& conn) {
  const std::string_view path = path_of(req.target());
  // Only the admin routes it knows: an unknown /admin/* path is 404.
  const bool admin = AdminRoutes::serves(path) && (AdminRoutes::operator_only(path) || path == "/healthz" || path == "/readyz");
  co_await answer_get(req, conn, path, false, admin, generation_.load());
}

Task<void> Gateway::stop_batches(std::chrono::milliseconds deadline) {
  if (batches_) co_await batches_->drain(deadline);
}

Task<void> Gateway::flush_traces(std::chrono::milliseconds deadline) {
  if (traces_) co_await traces_->drain(deadline);
}

Task<void> Gateway::answer_batch(HttpRequest& req, ClientConnection& conn, std::string_view path,
                                 std::shared_ptr<Generation> generation) {
  batch::BatchRoutes::Headers headers{{"x-request-id", choose_request_id(req["x-request-id"])}};
  generation->cors().add_answer_headers(req["origin"], headers);
  if (!batch_routes_) {
    co_await send_error(conn, ApiError{ErrorCode::kInternal, batches_error_, {}, {}}, headers);
    co_return;
  }
  co_await batch_routes_->handle(req, conn, path, generation->runtime(), headers);
}

void Gateway::note_route_refusal(const HttpRequest& req, const ApiError& err, std::string_view reason) {
  refusals_->record(HttpRefusal{.status = err.status(), .reason = reason, .target = req.target()});
}

Task<void> Gateway::answer_preflight(HttpRequest& req, ClientConnection& conn, std::string_view methods,
                                     std::shared_ptr<Generation> generation) {
  const Cors& cors = generation->cors();
  // A browser's CORS preflight: may a page of this origin send that method
  // with those headers? 200 with the permission (as Envoy's CORS filter; any
  // 2xx will do), or 403 saying why not.
  const std::string request_id = choose_request_id(req["x-request-id"]);
  auto allowed = cors.preflight(req["origin"], req["access-control-request-method"],
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
                               bool admin, std::shared_ptr<Generation> generation) {
  const Cors& cors = generation->cors();
  // Everything but inference answers with the request's id too.
  std::vector<std::pair<std::string, std::string>> headers{{"x-request-id", choose_request_id(req["x-request-id"])}};
  cors.add_answer_headers(req["origin"], headers);
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
    const bool post = inference || AdminRoutes::takes_post(path);
    const std::string_view allowed = path == AdminRoutes::kConfig ? "GET, HEAD, POST"
                                     : post ? (cors.enabled() ? "POST, OPTIONS" : "POST")
                                            : (cors.enabled() ? "GET, HEAD, OPTIONS" : "GET, HEAD");
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
