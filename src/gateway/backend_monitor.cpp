#include "gateway/backend_monitor.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

#include "gateway/engine_signal_log.hpp"
#include "http/outbound_connection.hpp"

namespace arbiter {

namespace {

using Clock = std::chrono::steady_clock;

// A /metrics body larger than this is an error (vLLM's is ~50 KB; hundreds of
// LoRA adapters stay well below).
constexpr uint64_t kMaxBodyBytes = 8u << 20;
constexpr std::chrono::milliseconds kMaxAutoTimeout{1000};

// The monitor whose callback the current thread is running, so that stop()
// called from inside the callback does not wait for itself.
thread_local const void* t_callback_owner = nullptr;

// One backend's scrape connection and its loop's pacer. Owned by the loop's
// frame; stop() reaches it through a weak pointer, so it cannot outlive it.
struct ScrapeConnection {
  ScrapeConnection(const net::any_io_executor& executor, const MonitorTarget& target, std::string_view path)
      : client(std::make_shared<OutboundConnection>(executor, target.host, target.port, target.tls)), pacer(executor) {
    request.method(http::verb::get);
    request.target(path);
    request.version(11);
    // An IPv6 literal goes in brackets (a URL's host has them already).
    const bool v6 = target.host.find(':') != std::string::npos && !target.host.starts_with('[');
    const std::string host = v6 ? "[" + target.host + "]" : target.host;
    request.set(http::field::host, host + ":" + std::to_string(target.port));
    request.set(http::field::user_agent, "arbiter-backend-monitor");
    request.set(http::field::accept, "text/plain");
  }

  // Ends every pending operation of the loop (stop()).
  void close() {
    client->close();
    pacer.cancel();
  }

  std::shared_ptr<OutboundConnection> client;  // the keep-alive connection and its deadline
  net::steady_timer pacer;                   // waits for the next scrape
  http::request<http::empty_body> request;   // the GET, reused for every scrape
};

// How one scrape attempt ended.
struct Attempt {
  ScrapeOutcome outcome = ScrapeOutcome::kFailed;  // for the verdict
  EngineLoad load;                                 // parsed figures (kOk)
  std::string_view problem;                        // why it was not kOk
  bool connected = false;                          // a new connection was opened
};

}  // namespace

std::chrono::milliseconds MonitorOptions::effective_timeout(uint32_t silent,
                                                            std::chrono::steady_clock::duration answered_in) const {
  using std::chrono::milliseconds;
  const milliseconds base = timeout.count() > 0 ? timeout : std::min(interval * 5, kMaxAutoTimeout);
  const auto cap = std::max(base, std::chrono::duration_cast<milliseconds>(rules.silence_before_down / 2));
  auto t = std::max(base, std::chrono::ceil<milliseconds>(answered_in * 2));
  for (uint32_t i = 0; i < silent && t < cap; ++i) t *= 2;
  return std::min(t, cap);
}

MonitorCounters& MonitorCounters::operator+=(const MonitorCounters& other) {
  scrapes_ok += other.scrapes_ok;
  scrapes_unusable += other.scrapes_unusable;
  scrapes_failed += other.scrapes_failed;
  connects += other.connects;
  saturated_transitions += other.saturated_transitions;
  stale_transitions += other.stale_transitions;
  down_transitions += other.down_transitions;
  return *this;
}

struct BackendMonitor::Shared {
  // One backend. `state`, `reported`, `counters` and `problem` change on the
  // strand under `mu` (snapshot() reads them from any thread).
  struct Slot {
    MonitorTarget target;                  // what to scrape
    MonitorState state;                    // scrape history
    sched::BackendSignal reported;         // last verdict given to the callback
    std::optional<uint64_t> reported_kv;   // last KV size given to the callback
    MonitorCounters counters;              // event counts
    std::string_view problem;              // why the last scrape was not kOk
    std::weak_ptr<ScrapeConnection> io;    // the loop's I/O objects; strand only
  };

  Shared(net::any_io_executor executor, std::vector<MonitorTarget> targets, MonitorOptions opts,
         SignalCallback callback, SignalCallback each)
      : strand(net::make_strand(executor)),
        options(std::move(opts)),
        on_change(std::move(callback)),
        on_judged(std::move(each)),
        slots(targets.size()) {
    for (std::size_t i = 0; i < targets.size(); ++i) slots[i].target = std::move(targets[i]);
  }

  // Records a scrape (when given), re-judges and reports a change. Strand only.
  void update(Slot& slot, const Attempt* attempt, Clock::time_point now);
  void log(std::string_view line) const;
  void notify(const SignalCallback& callback, const Slot& slot, const sched::BackendSignal& signal,
              const EngineLoad& load);

  net::strand<net::any_io_executor> strand;  // every loop and handler runs here
  const MonitorOptions options;              // as given
  const SignalCallback on_change;            // verdict changes
  const SignalCallback on_judged;            // every judgement (may be empty)
  std::vector<Slot> slots;                   // one per target; never resized
  mutable std::mutex mu;                     // guards the Slot fields snapshot() reads
  std::mutex callback_mu;                    // held while the callback runs (stop() waits on it)
  std::atomic<bool> started{false};          // start() ran
  std::atomic<bool> stopped{false};          // stop() ran: loops end, no more callbacks
  std::weak_ptr<net::steady_timer> ticker;   // the re-judge timer; strand only
};

void BackendMonitor::Shared::update(Slot& slot, const Attempt* attempt, Clock::time_point now) {
  sched::BackendSignal signal;
  EngineLoad load;
  EngineLoad latest;  // the last successful scrape's, for on_judged
  bool changed = false;
  std::optional<std::string> log_line;
  {
    std::lock_guard lock(mu);
    if (attempt) {
      record_scrape(slot.state, attempt->outcome, attempt->load, now);
      if (attempt->connected) ++slot.counters.connects;
      switch (attempt->outcome) {
        case ScrapeOutcome::kOk:
          ++slot.counters.scrapes_ok;
          break;
        case ScrapeOutcome::kUnusable:
          ++slot.counters.scrapes_unusable;
          slot.problem = attempt->problem;
          break;
        case ScrapeOutcome::kFailed:
        case ScrapeOutcome::kSilent:
          ++slot.counters.scrapes_failed;
          slot.problem = attempt->problem;
          break;
      }
    }
    signal = judge(slot.state, now, options.rules);
    // A new verdict, or only a new running count (prefix affinity's view of
    // the engine's load): both are passed on, only verdicts are counted.
    const bool verdict = !sched::same_verdict(signal, slot.reported);
    // The engine's KV size (prefix affinity sizes its index by it) too.
    changed = verdict || signal.engine_running != slot.reported.engine_running ||
              slot.state.load.kv_cache_tokens != slot.reported_kv;
    if (verdict) {
      // Why: this scrape's problem, or the last one's while failures last.
      const std::string_view why = attempt ? attempt->problem
                                   : slot.state.consecutive_failures > 0 ? slot.problem
                                                                         : std::string_view();
      log_line = engine_signal_line(slot.target.name, slot.reported, signal, slot.state, why, now);
      if (signal.saturated && !slot.reported.saturated) ++slot.counters.saturated_transitions;
      if (signal.stale && !slot.reported.stale) ++slot.counters.stale_transitions;
      if (signal.down && !slot.reported.down) ++slot.counters.down_transitions;
    }
    if (changed) {
      slot.reported = signal;
      slot.reported_kv = slot.state.load.kv_cache_tokens;
      load = slot.state.load;
    }
    if (on_judged) latest = slot.state.load;
  }
  if (log_line) log(*log_line);
  if (changed) notify(on_change, slot, signal, load);
  notify(on_judged, slot, signal, latest);
}

void BackendMonitor::Shared::log(std::string_view line) const {
  if (options.log) {
    options.log(line);
  } else {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

void BackendMonitor::Shared::notify(const SignalCallback& callback, const Slot& slot,
                                    const sched::BackendSignal& signal, const EngineLoad& load) {
  std::lock_guard lock(callback_mu);
  if (stopped.load() || !callback) return;
  t_callback_owner = this;
  callback(slot.target.pool, slot.target.backend, signal, load);
  t_callback_owner = nullptr;
}

namespace {

using Shared = BackendMonitor::Shared;

// One scrape under `timeout`. Fills `out`.
Task<void> scrape_once(ScrapeConnection& c, std::chrono::milliseconds timeout, Attempt& out) {
  const OutboundResponse answer = co_await c.client->request(c.request, timeout, kMaxBodyBytes);
  out.connected = answer.connected;
  if (answer.failure != OutboundFailure::kNone) {
    out.problem = outbound_failure_name(answer.failure);
    // No answer within the deadline: slow or hung, not refused.
    out.outcome = answer.failure == OutboundFailure::kTimeout ? ScrapeOutcome::kSilent : ScrapeOutcome::kFailed;
    co_return;
  }
  const unsigned status = answer.response.result_int();
  if (status == 200) out.load = parse_engine_load(answer.response.body());
  out.outcome = classify_answer(status, out.load);
  if (out.outcome == ScrapeOutcome::kFailed) out.problem = "status";
  else if (out.outcome == ScrapeOutcome::kUnusable) out.problem = status == 200 ? "no_figures" : "status";
}

// Wait before the next attempt: the interval, or a doubling backoff while
// scrapes fail.
Clock::duration pause_after(const MonitorOptions& options, uint32_t failures) {
  const Clock::duration interval = options.interval;
  if (failures == 0) return interval;
  const Clock::duration cap = std::max<Clock::duration>(interval, options.max_backoff);
  Clock::duration wait = interval;
  for (uint32_t i = 1; i < failures && wait < cap; ++i) wait *= 2;
  return std::min(wait, cap);
}

Task<void> scrape_loop(std::shared_ptr<Shared> sh, std::size_t index) {
  Shared::Slot& slot = sh->slots[index];
  auto conn = std::make_shared<ScrapeConnection>(sh->strand, slot.target, sh->options.path);
  slot.io = conn;
  Clock::duration answered_in{};  // what the last answered scrape took
  while (!sh->stopped.load()) {
    const auto started = Clock::now();
    Attempt attempt;
    // Only this loop writes the state (on the strand): no lock to read it.
    const auto timeout = sh->options.effective_timeout(slot.state.consecutive_silent, answered_in);
    co_await scrape_once(*conn, timeout, attempt);
    if (sh->stopped.load()) break;
    const auto now = Clock::now();
    if (attempt.outcome == ScrapeOutcome::kOk || attempt.outcome == ScrapeOutcome::kUnusable) {
      answered_in = now - started;
    }
    sh->update(slot, &attempt, now);
    const uint32_t failures = slot.state.consecutive_failures;
    conn->pacer.expires_at(started + pause_after(sh->options, failures));
    co_await conn->pacer.async_wait(kAsTuple);
  }
  conn->close();
}

// Re-judges every backend each interval, so staleness is seen while scrapes
// hang or fail.
Task<void> tick_loop(std::shared_ptr<Shared> sh) {
  auto timer = std::make_shared<net::steady_timer>(sh->strand);
  sh->ticker = timer;
  while (!sh->stopped.load()) {
    timer->expires_after(sh->options.interval);
    co_await timer->async_wait(kAsTuple);
    if (sh->stopped.load()) break;
    const auto now = Clock::now();
    for (auto& slot : sh->slots) sh->update(slot, nullptr, now);
  }
}

}  // namespace

BackendMonitor::BackendMonitor(net::any_io_executor executor, std::vector<MonitorTarget> targets,
                               MonitorOptions options, SignalCallback on_change, SignalCallback on_judged)
    : shared_(std::make_shared<Shared>(std::move(executor), std::move(targets), std::move(options),
                                       std::move(on_change), std::move(on_judged))) {}

BackendMonitor::~BackendMonitor() { stop(); }

void BackendMonitor::start() {
  if (shared_->stopped.load() || shared_->started.exchange(true)) return;
  // Every backend counts as freshly scraped (and empty) at the start.
  const auto now = Clock::now();
  {
    std::lock_guard lock(shared_->mu);
    for (auto& slot : shared_->slots) slot.state.last_success = slot.state.last_answer = now;
  }
  for (std::size_t i = 0; i < shared_->slots.size(); ++i) {
    net::co_spawn(shared_->strand, scrape_loop(shared_, i), net::detached);
  }
  net::co_spawn(shared_->strand, tick_loop(shared_), net::detached);
}

void BackendMonitor::stop() {
  Shared& sh = *shared_;
  const bool first = !sh.stopped.exchange(true);
  // Wait out a callback running on another thread; from inside the callback
  // the lock is ours already.
  if (t_callback_owner != &sh) {
    std::lock_guard lock(sh.callback_mu);
  }
  if (!first) return;
  net::post(sh.strand, [sh = shared_] {
    for (auto& slot : sh->slots) {
      if (auto conn = slot.io.lock()) conn->close();
    }
    if (auto timer = sh->ticker.lock()) timer->cancel();
  });
}

std::vector<BackendSnapshot> BackendMonitor::snapshot() const {
  std::vector<BackendSnapshot> out;
  out.reserve(shared_->slots.size());
  std::lock_guard lock(shared_->mu);
  for (const auto& slot : shared_->slots) {
    BackendSnapshot snap;
    snap.pool = slot.target.pool;
    snap.backend = slot.target.backend;
    snap.name = slot.target.name;
    snap.signal = slot.reported;
    snap.state = slot.state;
    snap.counters = slot.counters;
    snap.last_failure = slot.problem;
    out.push_back(std::move(snap));
  }
  return out;
}

MonitorCounters BackendMonitor::totals() const {
  MonitorCounters sum;
  std::lock_guard lock(shared_->mu);
  for (const auto& slot : shared_->slots) sum += slot.counters;
  return sum;
}

}  // namespace arbiter
