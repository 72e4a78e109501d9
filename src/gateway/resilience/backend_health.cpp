#include "gateway/resilience/backend_health.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/resilience/resilience_settings.hpp"
#include "gateway/resilience/health_probe.hpp"
#include "observability/event_log.hpp"

namespace arbiter {

namespace {

// The loop's longest sleep: what falls due is applied at most this late.
constexpr std::chrono::milliseconds kLoopTick{100};
// How long an engine's 429 without Retry-After holds it.
constexpr std::chrono::milliseconds kOverloadHold{1000};
// A model whose breaker is open has its backends probed this often: one
// 1-token completion each, only while it is open.
constexpr std::chrono::milliseconds kOpenProbeEvery{1000};

void log_transition(const ModelConfig& model, const BackendConfig& backend,
                    const resilience::OutlierTransition& t) {
  log_event(EventLevel::kWarn, "backend_health",
            {{"pool", model.pool_name()},
             {"backend", backend.name},
             {"from", resilience::state_name(t.from)},
             {"to", resilience::state_name(t.to)},
             {"reason", t.reason},
             {"ejection_s", std::chrono::duration<double>(t.ejection).count()}});
}

}  // namespace

BackendHealth::BackendHealth(const Config& config, SchedulerLink dispatcher, net::any_io_executor executor,
                             GatewayMetrics& metrics)
    : config_(config),
      dispatcher_(dispatcher),
      strand_(net::make_strand(executor)),
      metrics_(metrics),
      random_(static_cast<uint64_t>(Clock::now().time_since_epoch().count()) | 1),
      timer_(strand_) {
  const auto outlier = resilience::outlier_settings(config.outlier_detection, config.health_probes.enabled);
  for (const ModelConfig& m : config.models) {
    const auto n = static_cast<uint32_t>(m.backends.size());
    pools_.emplace_back(resilience::OutlierDetector(outlier, n), resilience::RetryBudget(config.retries), n);
  }
}

BackendHealth::~BackendHealth() { stop(); }

void BackendHealth::start() {
  net::co_spawn(strand_, loop(), net::detached);
}

void BackendHealth::set_breaker_hooks(std::function<bool(uint32_t)> breaker_open,
                                      std::function<void(uint32_t)> probe_ok) {
  breaker_open_ = std::move(breaker_open);
  probe_ok_ = std::move(probe_ok);
  breaker_probing_.clear();
  for (const ModelConfig& m : config_.models) breaker_probing_.emplace_back(m.backends.size(), false);
}

void BackendHealth::add_breaker_probes(Clock::time_point now, std::vector<Probe>& probes) {
  if (!breaker_open_ || now < next_breaker_probes_) return;
  next_breaker_probes_ = now + kOpenProbeEvery;
  for (uint32_t p = 0; p < breaker_probing_.size(); ++p) {
    if (!breaker_open_(p)) continue;
    for (uint32_t b = 0; b < breaker_probing_[p].size(); ++b) {
      const bool already = breaker_probing_[p][b] ||
                           std::ranges::any_of(probes, [&](const Probe& q) { return q.pool == p && q.backend == b; });
      if (already) continue;
      breaker_probing_[p][b] = true;
      probes.push_back({p, b, false});
    }
  }
}

void BackendHealth::stop() {
  if (stopped_.exchange(true)) return;
  net::post(strand_, [this] { timer_.cancel(); });
}

void BackendHealth::assume(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal) {
  std::lock_guard lock(mu_);
  if (pool >= pools_.size() || backend >= pools_[pool].monitor.size()) return;
  pools_[pool].monitor[backend] = signal;
  pools_[pool].published[backend] = signal;
  pools_[pool].held[backend] = signal.down;
}

void BackendHealth::carry_from(const BackendHealth& old, uint32_t from, uint32_t to) {
  std::scoped_lock lock(mu_, old.mu_);
  if (from >= old.pools_.size() || to >= pools_.size()) return;
  pools_[to].detector = old.pools_[from].detector;
  pools_[to].budget = old.pools_[from].budget;
}

void BackendHealth::on_signal(uint32_t pool, uint32_t backend, const sched::BackendSignal& signal) {
  std::vector<Update> updates;
  {
    std::lock_guard lock(mu_);
    PoolHealth& p = pools_[pool];
    sched::BackendSignal judged = signal;
    // Held down until its engine answers a scrape: a verdict from no
    // answer yet (stale) keeps it down.
    if (p.held[backend] && judged.stale) judged.down = true;
    p.held[backend] = p.held[backend] && judged.stale;
    p.monitor[backend] = judged;
    settle_locked(pool, Clock::now(), updates);
  }
  tell(updates);
}

void BackendHealth::set_capacity(uint32_t pool, uint32_t backend, uint32_t base, uint32_t extra,
                                 double engine_share) {
  std::vector<Update> updates;
  {
    std::lock_guard lock(mu_);
    pools_[pool].capacity[backend] = {.base = base, .extra = extra, .engine_share = engine_share};
    settle_locked(pool, Clock::now(), updates);
  }
  tell(updates);
}

void BackendHealth::record(uint32_t pool, uint32_t backend, RunVerdict verdict,
                           std::optional<std::chrono::milliseconds> retry_after) {
  if (!config_.outlier_detection.enabled || verdict == RunVerdict::kNeutral) return;
  std::vector<Update> updates;
  {
    std::lock_guard lock(mu_);
    PoolHealth& p = pools_[pool];
    const auto now = Clock::now();
    const auto before = p.detector.state(backend);
    const auto cap = config_.outlier_detection.max_retry_after;
    // A 429 without Retry-After still says the engine is full: a short hold,
    // or one answering 429 to everything looks least loaded and gets more.
    if (verdict == RunVerdict::kOverloaded && !retry_after) retry_after = kOverloadHold;
    if (retry_after && cap.count() > 0 && retry_after->count() > 0) {
      p.detector.hold(backend, now + std::min(*retry_after, cap), now);
    }
    if (verdict != RunVerdict::kOverloaded) p.detector.record(backend, verdict == RunVerdict::kFailure, now);
    // The usual run changes no state: no walk over the pool's backends on
    // the request path (what falls due with time is the loop's).
    if (p.detector.state(backend) != before) settle_locked(pool, now, updates);
  }
  tell(updates);
}

void BackendHealth::on_request(uint32_t pool) {
  std::lock_guard lock(mu_);
  pools_[pool].budget.on_request(Clock::now());
}

bool BackendHealth::try_retry(uint32_t pool) {
  std::lock_guard lock(mu_);
  return pools_[pool].budget.try_retry(Clock::now());
}

std::chrono::milliseconds BackendHealth::backoff(uint32_t pool, uint32_t attempt) {
  std::lock_guard lock(mu_);
  random_ ^= random_ << 13;
  random_ ^= random_ >> 7;
  random_ ^= random_ << 17;
  return std::chrono::ceil<std::chrono::milliseconds>(pools_[pool].budget.backoff(attempt, random_));
}

void BackendHealth::settle_locked(uint32_t p, Clock::time_point now, std::vector<Update>& out) {
  PoolHealth& pool = pools_[p];
  const ModelConfig& model = config_.models[p];
  pool.detector.advance(now);
  for (const resilience::OutlierTransition& t : pool.detector.take_transitions()) {
    const BackendConfig& b = model.backends[t.backend];
    if (t.to == resilience::BackendHealthState::kEjected) {
      metrics_.backend_ejections.with({model.name, b.name, std::string(t.reason)}).inc();
    }
    log_transition(model, b, t);
  }
  // Panic mode: nothing left to serve but ejected backends; they serve.
  bool usable = false, excluded = false;
  for (uint32_t b = 0; b < pool.monitor.size(); ++b) {
    const bool out_now = pool.detector.excluded(b);
    usable |= !pool.monitor[b].down && !out_now;
    excluded |= out_now && !pool.monitor[b].down;
  }
  pool.panic = !usable && excluded;
  for (uint32_t b = 0; b < pool.monitor.size(); ++b) {
    sched::BackendSignal signal = pool.monitor[b];
    signal.max_in_flight = pool.capacity[b].base;
    signal.extra_slots = pool.capacity[b].extra;
    signal.engine_share = pool.capacity[b].engine_share;
    if (pool.detector.excluded(b)) {
      signal.down = signal.down || !pool.panic;
    } else if (const double share = pool.detector.capacity_fraction(b, now); share < 1) {
      const unsigned limit = model.backends[b].max_concurrency;
      const unsigned ramp = std::max(1u, static_cast<unsigned>(std::ceil(share * limit)));
      signal.max_in_flight = signal.max_in_flight > 0 ? std::min(signal.max_in_flight, ramp) : ramp;
      signal.extra_slots = 0;  // nothing above the limit while it ramps up
    }
    const sched::BackendSignal& before = pool.published[b];
    if (!sched::same_verdict(signal, before) || signal.engine_running != before.engine_running) {
      pool.published[b] = signal;
      out.push_back({p, b, signal});
    }
  }
}

void BackendHealth::tell(const std::vector<Update>& updates) {
  for (const Update& u : updates) dispatcher_.set_backend_state(u.pool, u.backend, u.signal);
}

Task<void> BackendHealth::loop() {
  next_periodic_ = Clock::now() + config_.health_probes.interval;
  while (!stopped_) {
    std::vector<Update> updates;
    std::vector<Probe> probes;
    const auto now = Clock::now();
    const bool periodic = config_.health_probes.enabled && now >= next_periodic_;
    if (periodic) next_periodic_ = now + config_.health_probes.interval;
    {
      std::lock_guard lock(mu_);
      for (uint32_t p = 0; p < pools_.size(); ++p) {
        settle_locked(p, now, updates);
        for (const uint32_t b : pools_[p].detector.take_probe_requests()) probes.push_back({p, b, true});
        if (!periodic) continue;
        for (uint32_t b = 0; b < pools_[p].monitor.size(); ++b) {
          if (!pools_[p].detector.excluded(b)) probes.push_back({p, b, false});
        }
      }
    }
    tell(updates);
    add_breaker_probes(now, probes);
    for (const Probe& probe : probes) net::co_spawn(strand_, run_probe(probe), net::detached);
    timer_.expires_after(kLoopTick);
    co_await timer_.async_wait(kAsTuple);
  }
}

Task<void> BackendHealth::run_probe(Probe probe) {
  const ModelConfig& model = config_.models[probe.pool];
  const BackendConfig& backend = model.backends[probe.backend];
  ProbeTarget target{
      .host = backend.host, .port = backend.port, .model = model.name, .authorization = backend.authorization};
  std::string failure;
  if (backend.tls) {
    // Built per probe (probes are rare): its files are read again.
    auto tls = make_client_tls(backend);
    if (tls) target.tls = std::move(*tls);
    else failure = "tls: " + tls.error();
  }
  if (failure.empty()) failure = co_await probe_backend(target, config_.health_probes.timeout);
  metrics_.health_probes.with({model.name, backend.name, failure.empty() ? "ok" : "failed"}).inc();
  if (!failure.empty()) {
    log_event(EventLevel::kWarn, "health_probe_failed", {{"backend", backend.name}, {"why", failure}});
  }
  if (stopped_) co_return;
  if (!breaker_probing_.empty()) breaker_probing_[probe.pool][probe.backend] = false;
  std::vector<Update> updates;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    pools_[probe.pool].detector.probe_result(probe.backend, failure.empty(), now);
    settle_locked(probe.pool, now, updates);
  }
  tell(updates);
  if (failure.empty() && probe_ok_) probe_ok_(probe.pool);
}

void BackendHealth::export_state() {
  std::lock_guard lock(mu_);
  for (uint32_t p = 0; p < pools_.size(); ++p) {
    const ModelConfig& model = config_.models[p];
    PoolHealth& pool = pools_[p];
    metrics_.pool_panic.with({model.pool_name()}).set(pool.panic ? 1 : 0);
    for (uint32_t b = 0; b < model.backends.size(); ++b) {
      const auto state = pool.detector.state(b);
      for (const auto s : {resilience::BackendHealthState::kHealthy, resilience::BackendHealthState::kEjected,
                           resilience::BackendHealthState::kProbing, resilience::BackendHealthState::kSlowStart}) {
        metrics_.backend_health.with({model.name, model.backends[b].name, std::string(resilience::state_name(s))})
            .set(s == state ? 1 : 0);
      }
    }
  }
}

}  // namespace arbiter
