#include "gateway/gateway.hpp"

#include <stdexcept>
#include <unordered_set>

#include <boost/json.hpp>

#include "core/prefix_blocks.hpp"
#include "core/request_parser.hpp"
#include "gateway/request_id.hpp"
#include "gateway/scheduler_setup.hpp"
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

// Output tokens assumed for the scheduler's cost estimate when the request
// sets no max_tokens.
constexpr int64_t kDefaultOutputEstimate = 256;

// The supersede key: the client's explicit header, else (for classes that
// ask for it) the OpenAI `user` field. Empty: none.
std::string supersede_key(const HttpRequest& req, const ClassConfig& cls, const ParsedRequest& parsed) {
  if (auto h = req.field("x-arbiter-supersede-key"); h && !h->empty()) {
    return "key:" + std::string(*h);
  }
  if (cls.supersede_by_user) {
    if (parsed.info.user) return "user:" + *parsed.info.user;
  }
  return {};
}

// A labelled series found on first use and kept in `slot`: a labelled
// lookup (label vector, hash) per request otherwise. `find` returns it.
template <class Series, class Find>
Series& cached_series(std::atomic<Series*>& slot, const Find& find) {
  Series* s = slot.load(std::memory_order_acquire);
  if (s == nullptr) {
    s = &find();
    slot.store(s, std::memory_order_release);
  }
  return *s;
}

}  // namespace

// Everything known about a request once it is admitted.
struct Gateway::Admission {
  const TenantConfig* tenant = nullptr;
  ParsedRequest parsed;
  std::size_t pool = 0;       // index of the model's pool
  std::size_t cls = 0;        // index of the class
  ResumeMethod resume = ResumeMethod::kNone;  // how a preempted run would continue
  std::vector<uint64_t> prefix;  // prompt prefix blocks: the scheduler's Request::prefix_blocks
};

Gateway::Gateway(Config config, std::size_t io_threads, net::any_io_executor timer_executor)
    : config_(std::move(config)),
      tenants_(config_.tenants, config_.auth.enabled),
      classifier_(config_.classes, config_.default_class),
      access_log_(config_.log.access_log) {
  for (std::size_t i = 0; i < config_.models.size(); ++i) {
    pools_.push_back(std::make_unique<ModelPool>(config_.models[i], io_threads));
    pool_index_[config_.models[i].name].push_back(i);
  }
  class_series_ = std::make_unique<ClassSeries[]>(config_.models.size() * config_.classes.size());
  token_series_ = std::make_unique<TokenSeries[]>(config_.models.size() * config_.classes.size() *
                                                  (config_.tenants.size() + 1));
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
  if (config_.engine_signals.enabled) start_monitor(timer_executor);
}

Gateway::~Gateway() {
  if (monitor_) monitor_->stop();
  dispatcher_->stop();
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
                         .name = backends[b].name});
    }
  }
  MonitorOptions options;
  options.interval = config_.engine_signals.interval;
  options.rules.stale_after = config_.engine_signals.stale_after;
  options.rules.kv_threshold = config_.engine_signals.kv_saturation;
  // Verdict changes go straight to the scheduler: a saturated backend takes
  // no new dispatch, a stale one falls back to its concurrency limit.
  monitor_ = std::make_unique<BackendMonitor>(
      executor, std::move(targets), options,
      [this](uint32_t pool, uint32_t backend, const sched::BackendSignal& signal, const EngineLoad&) {
        dispatcher_->set_backend_state(pool, backend, signal);
      });
  monitor_->start();
}

void Gateway::refresh_monitor_metrics() {
  if (!monitor_) return;
  for (const auto& b : monitor_->snapshot()) {
    const std::string_view model = config_.models[b.pool].name;
    metrics_.backend_saturated.with({model, b.name}).set(b.signal.saturated ? 1 : 0);
    metrics_.backend_signal_stale.with({model, b.name}).set(b.signal.stale ? 1 : 0);
    metrics_.backend_down.with({model, b.name}).set(b.signal.down ? 1 : 0);
    metrics_.backend_stale_total.with({model, b.name}).set(b.counters.stale_transitions);
    metrics_.backend_scrapes.with({model, b.name, "ok"}).set(b.counters.scrapes_ok);
    metrics_.backend_scrapes.with({model, b.name, "failed"}).set(b.counters.scrapes_failed);
    metrics_.backend_scrapes.with({model, b.name, "unusable"}).set(b.counters.scrapes_unusable);
    if (b.state.load.waiting) metrics_.engine_waiting.with({model, b.name}).set(*b.state.load.waiting);
    if (b.state.load.kv_usage) metrics_.engine_kv_usage.with({model, b.name}).set(*b.state.load.kv_usage);
  }
}

std::size_t Gateway::pool_for(const std::vector<std::size_t>& pools, std::size_t cls) const {
  const std::string& name = config_.classes[cls].name;
  std::size_t general = pools.front();
  for (const std::size_t p : pools) {
    const auto& classes = config_.models[p].classes;
    if (classes.empty()) general = p;
    if (std::find(classes.begin(), classes.end(), name) != classes.end()) return p;
  }
  return general;
}

std::string Gateway::models_body() const {
  // In configuration order, each model once however many pools serve it.
  boost::json::array data;
  std::unordered_set<std::string_view> listed;
  for (const auto& m : config_.models) {
    if (!listed.insert(m.name).second) continue;
    data.push_back(boost::json::object{
        {"id", m.name}, {"object", "model"}, {"created", 0}, {"owned_by", "arbiter"}});
  }
  return boost::json::serialize(boost::json::object{{"object", "list"}, {"data", std::move(data)}});
}

void Gateway::refresh_scheduler_metrics() {
  dispatcher_->inspect([this](const sched::Scheduler& s) {
    const auto& counters = s.counters();
    // A model with per-class pools sums its pools per class (a class runs
    // in one of them).
    for (const auto& [name, pools] : pool_index_) {
      for (std::size_t c = 0; c < config_.classes.size(); ++c) {
        const auto klass = static_cast<sched::ClassId>(c);
        uint32_t depth = 0, in_flight = 0;
        for (const std::size_t p : pools) {
          depth += s.queue_depth(static_cast<sched::PoolId>(p), klass);
          in_flight += s.class_in_flight(static_cast<sched::PoolId>(p), klass);
        }
        metrics_.queue_depth.with({name, config_.classes[c].name}).set(depth);
        metrics_.class_in_flight.with({name, config_.classes[c].name}).set(in_flight);
      }
    }
    for (std::size_t p = 0; p < config_.models.size(); ++p) {
      const auto& model = config_.models[p];
      for (std::size_t b = 0; b < model.backends.size(); ++b) {
        metrics_.backend_in_flight.with({model.name, model.backends[b].name})
            .set(s.backend_in_flight(static_cast<sched::PoolId>(p), static_cast<sched::BackendId>(b)));
      }
    }
    for (const auto& d : s.tenant_queue_depths()) {
      const std::string_view tenant =
          d.tenant < config_.tenants.size() ? std::string_view(config_.tenants[d.tenant].name) : kAnonymousTenant;
      metrics_.tenant_queue_depth
          .with({config_.models[d.pool].name, config_.classes[d.klass].name, tenant})
          .set(d.queued);
    }
    for (std::size_t c = 0; c < counters.classes.size() && c < config_.classes.size(); ++c) {
      const auto& k = counters.classes[c];
      const std::string_view name = config_.classes[c].name;
      const std::pair<std::string_view, uint64_t> events[] = {
          {"enqueued", k.enqueued},
          {"dispatched", k.dispatched},
          {"completed", k.completed},
          {"rejected_class_full", k.rejected_class_full},
          {"rejected_tenant_full", k.rejected_tenant_full},
          {"rejected_predicted", k.rejected_predicted},
          {"cancelled_queued", k.cancelled_queued},
          {"cancelled_in_flight", k.cancelled_in_flight},
          {"superseded_queued", k.superseded_queued},
          {"superseded_in_flight", k.superseded_in_flight},
          {"preempted", k.preempted},
          {"expired", k.expired},
          {"borrowed", k.borrowed},
          {"reclaimed", k.reclaimed},
      };
      for (const auto& [event, value] : events) {
        metrics_.scheduler_events.with({name, event}).set(value);
      }
    }
    metrics_.stale_dispatches.set(counters.stale_dispatches);
  });
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
      refresh_scheduler_metrics();
      refresh_monitor_metrics();
      std::string text = metrics_.registry.render();
      co_await send_json(conn, http::status::ok, std::move(text), kPrometheusContentType);
      co_return;
    }
    if (path == "/v1/models") {
      if (auto tenant = tenants_.authenticate(req["authorization"]); !tenant) {
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
  Headers headers;
  headers.reserve(5);  // x-request-id and run_upstream's four: no regrowth
  headers.emplace_back("x-request-id", rec.request_id);

  // Admission: auth before anything is parsed, then body, model, class, caps.
  auto admit = [&]() -> std::expected<Admission, ApiError> {
    Admission a;
    auto tenant = tenants_.authenticate(req["authorization"]);
    if (!tenant) return std::unexpected(tenant.error());
    a.tenant = *tenant;
    if (a.tenant) rec.tenant = a.tenant->name;
    auto parsed = parse_request(route, std::move(req.body()));
    if (!parsed) return std::unexpected(parsed.error());
    a.parsed = std::move(*parsed);
    rec.stream = a.parsed.info.stream;
    auto it = pool_index_.find(a.parsed.info.model);
    if (it == pool_index_.end()) {
      return std::unexpected(ApiError{ErrorCode::kModelNotFound,
                                      "the model '" + a.parsed.info.model + "' does not exist",
                                      "model", {}});
    }
    rec.model = a.parsed.info.model;
    const std::optional<std::string_view> claimed = req.field("x-arbiter-class");
    auto cls = classifier_.classify({.route = route,
                                     .model = a.parsed.info.model,
                                     .tenant = a.tenant,
                                     .claimed = claimed,
                                     .max_tokens = a.parsed.info.max_tokens});
    if (!cls) return std::unexpected(cls.error());
    a.cls = *cls;
    rec.cls = config_.classes[a.cls].name;
    a.pool = pool_for(it->second, a.cls);
    // Hashed before a cap edits the text: the prompt's offset is the scan's.
    if (const std::size_t at = a.parsed.info.prompt_at;
        at < a.parsed.text.size() && pools_[a.pool]->routes_by_prefix()) {
      prefix_blocks(std::string_view(a.parsed.text).substr(at), 0, a.prefix);
    }
    if (const auto cap = config_.classes[a.cls].max_tokens_cap) {
      if (apply_max_tokens_cap(a.parsed, *cap)) metrics_.rewrites.with({rec.cls}).inc();
    }
    // Only work the scheduler may preempt needs a way to resume.
    const auto& policy = config_.classes[a.cls].policy;
    if (config_.scheduler.preemption && (policy.preemptible || policy.background)) {
      a.resume = resume_method(a.parsed, pools_[a.pool]->continues_chat());
    }
    return a;
  };

  RelayOutcome outcome;
  std::string backend_name;
  std::optional<double> dispatch_queue_ms;  // the first dispatch's queue wait
  auto admission = admit();
  if (!admission) {
    outcome.error = admission.error();
  } else {
    const ClassConfig& cls = config_.classes[admission->cls];
    const RequestInfo& info = admission->parsed.info;
    const std::string key = supersede_key(req, cls, admission->parsed);
    const sched::Request queued{
        .pool = static_cast<sched::PoolId>(admission->pool),
        .klass = static_cast<sched::ClassId>(admission->cls),
        .tenant = tenant_id(config_, admission->tenant),
        .cost_tokens = info.prompt_tokens_estimate + info.max_tokens.value_or(kDefaultOutputEstimate),
        .prompt_tokens = info.prompt_tokens_estimate,
        .deadline = std::nullopt,
        .supersede_key = key,
        .resumable = admission->resume != ResumeMethod::kNone,
        .prefix_blocks = admission->prefix};
    const auto enqueued = Clock::now();
    auto slot = co_await dispatcher_->acquire(queued, conn);
    // Queue time from enqueue, not from request start (auth and parsing
    // are not queueing); the scheduler's own figure once dispatched.
    rec.queue_ms = slot ? std::chrono::duration<double, std::milli>(slot->queue_wait()).count()
                        : ms_since(enqueued);
    if (slot && slot->waited_for() != sched::WaitReason::kNone) {
      rec.wait_reason = sched::wait_reason_name(slot->waited_for());
    }
    if (!slot) {
      outcome.error = slot.error();
      if (conn.client_gone()) outcome.status = 499;  // left while queued: nothing to send
    } else {
      dispatch_queue_ms = rec.queue_ms;  // observed after the response: not on its path
      outcome = co_await run_upstream(route, *admission, *slot, req, conn, rec, headers);
      backend_name = rec.backend;
      // Fairness and shares are charged with what the request really cost:
      // the engine's usage, or for a resumable stream without it the tokens
      // counted from its events (prompt still estimated).
      if (outcome.usage) {
        slot->set_actual_tokens(outcome.usage->prompt_tokens + outcome.usage->completion_tokens);
        rec.prompt_tokens = outcome.usage->prompt_tokens;
        rec.completion_tokens = outcome.usage->completion_tokens;
      } else if (outcome.generated >= 0) {
        slot->set_actual_tokens(info.prompt_tokens_estimate + outcome.generated);
      }
    }
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
  if (dispatch_queue_ms) metrics_.queue_wait.with({rec.model, rec.cls, rec.tenant}).observe(*dispatch_queue_ms / 1000.0);
  if (!rec.wait_reason.empty()) {
    metrics_.queue_waits.with({rec.model, rec.cls, std::string(rec.wait_reason)}).inc();
  }
  if (rec.prompt_tokens >= 0 && admission) {  // usage exists only for admitted requests
    TokenSeries& series =
        token_series_[(admission->pool * config_.classes.size() + admission->cls) * (config_.tenants.size() + 1) +
                      tenant_id(config_, admission->tenant)];
    cached_series(series.prompt, [&]() -> metrics::Counter& {
      return metrics_.tokens.with({rec.model, rec.cls, rec.tenant, "prompt"});
    }).inc(static_cast<uint64_t>(rec.prompt_tokens));
    cached_series(series.completion, [&]() -> metrics::Counter& {
      return metrics_.tokens.with({rec.model, rec.cls, rec.tenant, "completion"});
    }).inc(static_cast<uint64_t>(rec.completion_tokens));
  }
  auto class_histogram = [&](std::atomic<metrics::Histogram*> ClassSeries::*member,
                             metrics::Family<metrics::Histogram>& family) -> metrics::Histogram& {
    if (!admission) return family.with({rec.model, rec.cls});  // labelled `none`: not cached
    return cached_series(class_series_[admission->pool * config_.classes.size() + admission->cls].*member,
                         [&]() -> metrics::Histogram& { return family.with({rec.model, rec.cls}); });
  };
  class_histogram(&ClassSeries::duration, metrics_.duration).observe(rec.duration_ms / 1000.0);
  if (rec.ttfb_ms >= 0) {
    class_histogram(&ClassSeries::first_byte, metrics_.first_byte).observe(rec.ttfb_ms / 1000.0);
  }
  if (rec.status == 499) metrics_.cancelled.with({rec.model, rec.cls}).inc();
  if (!outcome.upstream_error.empty()) {
    metrics_.upstream_errors.with({backend_name, outcome.upstream_error}).inc();
  }
  if (outcome.retried) metrics_.upstream_retries.with({backend_name}).inc();
  if (rec.preemptions > 0) metrics_.resumed.with({rec.model, rec.cls}).inc();
  metrics_.in_flight.sub(1);
  access_log_.write(rec);
}

Task<RelayOutcome> Gateway::run_upstream(Route route, Admission& admission, Dispatcher::Slot& slot,
                                         HttpRequest& req, ClientConnection& conn, AccessRecord& rec,
                                         Headers& headers) {
  const RequestInfo& info = admission.parsed.info;
  std::optional<RelayResume> resume;
  if (admission.resume != ResumeMethod::kNone) {
    resume.emplace();
    resume->route = route;
    resume->aggregate = !info.stream;
  }
  const std::size_t own_headers = headers.size();  // x-request-id
  for (;;) {
    ModelPool& pool = *pools_[slot.pool()];  // its own, or a pool lending it a slot
    const BackendConfig& backend = pool.backend(slot.backend());
    rec.backend = backend.name;
    headers.resize(own_headers);
    headers.emplace_back("x-arbiter-class", rec.cls);
    headers.emplace_back("x-arbiter-backend", backend.name);
    headers.emplace_back("x-arbiter-queue-ms", std::to_string(static_cast<int64_t>(rec.queue_ms)));
    if (!rec.wait_reason.empty()) headers.emplace_back("x-arbiter-wait-reason", std::string(rec.wait_reason));
    headers.emplace_back("x-arbiter-preemptions", std::to_string(rec.preemptions));

    UpstreamRequest up{.target = route_path(route),
                       .host = pool.upstream(slot.backend()).host_header(),
                       .request_id = rec.request_id,
                       .accept = req["accept"],
                       .body = {}};
    if (resume) resume->checkpoint.begin_run();
    // The engine orders its own queue the way the gateway does: `priority`.
    const bool as_sent = !admission.parsed.document_changed() && !backend.priority_scheduling &&
                         (!resume || (!resume->checkpoint.resumed() && !resume->aggregate));
    std::string rewritten;  // the body sent when it is serialised from the document
    if (as_sent) {
      up.body = admission.parsed.text;  // the client's bytes (a cap written in place)
    } else if (resume) {
      boost::json::object body = run_body(admission.parsed, admission.resume, resume->checkpoint, resume->aggregate);
      if (backend.priority_scheduling) body["priority"] = engine_priority_field(backend.engine, slot.engine_priority());
      rewritten = boost::json::serialize(body);
      up.body = rewritten;
    } else {
      if (backend.priority_scheduling)
        admission.parsed.body()["priority"] = engine_priority_field(backend.engine, slot.engine_priority());
      rewritten = boost::json::serialize(admission.parsed.body());
      up.body = rewritten;
    }

    Interrupt interrupt;
    slot.set_interrupt_hook([&interrupt, &slot] { interrupt.fire(slot.preempted()); });
    const RelayRequest relay_request{.pool = pool.upstream(slot.backend()),
                                     .upstream_request = up,
                                     .client = conn,
                                     .timeouts = config_.timeouts,
                                     .limits = config_.limits,
                                     .response_headers = headers,
                                     .interrupt = interrupt,
                                     .resume = resume ? &*resume : nullptr,
                                     .on_first_event = backend.prefill_tokens_per_s > 0
                                                           ? std::function<void()>([&slot] { slot.first_token(); })
                                                           : std::function<void()>()};
    RelayOutcome outcome = co_await relay(relay_request);
    slot.set_interrupt_hook(nullptr);
    if (!outcome.preempted) {
      // A resumable request's usage is counted over all its runs.
      if (resume) {
        outcome.usage = resume->checkpoint.usage;
        outcome.generated = resume->checkpoint.tokens;
      }
      co_return outcome;
    }

    // Preempted: queue again, charged for what is left, and continue from
    // the checkpoint when dispatched.
    ++rec.preemptions;
    const int64_t generated = resume->checkpoint.tokens;
    const int64_t left = std::max<int64_t>(info.max_tokens.value_or(kDefaultOutputEstimate) - generated, 1);
    auto requeued = co_await slot.requeue(info.prompt_tokens_estimate + generated + left, conn);
    if (!requeued) {
      RelayOutcome failed;
      failed.error = std::move(requeued.error());
      failed.stream = outcome.stream;
      if (conn.client_gone()) {
        failed.status = 499;
      } else if (resume->client_stream_started) {
        co_await end_stream_with_error(conn, *failed.error);
        failed.status = conn.client_gone() ? 499 : 200;
      }
      co_return failed;
    }
    rec.queue_ms += std::chrono::duration<double, std::milli>(slot.queue_wait()).count();
  }
}

}  // namespace arbiter
