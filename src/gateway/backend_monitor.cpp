#include "gateway/backend_monitor.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

#include "gateway/engine_signal_log.hpp"

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

// One backend's scrape connection and the timers of its loop. Owned by the
// loop's frame; the deadline handler and stop() reach it through weak
// pointers, so neither can outlive it.
struct ScrapeConnection {
  ScrapeConnection(const net::any_io_executor& executor, const MonitorTarget& target,
                   std::string_view path)
      : socket(executor), resolver(executor), deadline(executor), pacer(executor) {
    beast::error_code ec;
    const auto address = net::ip::make_address(target.host, ec);
    if (!ec) literal = tcp::endpoint(address, target.port);
    request.method(http::verb::get);
    request.target(path);
    request.version(11);
    // An IPv6 literal goes in brackets.
    const bool v6 = target.host.find(':') != std::string::npos;
    const std::string host = v6 ? "[" + target.host + "]" : target.host;
    request.set(http::field::host, host + ":" + std::to_string(target.port));
    request.set(http::field::user_agent, "arbiter-backend-monitor");
    request.set(http::field::accept, "text/plain");
  }

  // Ends every pending operation of the loop (stop()).
  void close() {
    beast::error_code ignored;
    socket.close(ignored);  // a TLS layer over it fails with it
    resolver.cancel();
    deadline.cancel();
    pacer.cancel();
  }

  tcp::socket socket;                     // the keep-alive connection; closed between failures
  std::unique_ptr<ssl::stream<tcp::socket&>> tls;  // over `socket`, for an https:// backend; new per connection
  tcp::resolver resolver;                 // for host names; cancelled by the deadline
  net::steady_timer deadline;             // closes the socket when a scrape overruns
  net::steady_timer pacer;                // waits for the next scrape
  beast::flat_buffer buffer;              // read buffer, kept across keep-alive responses
  http::request<http::empty_body> request;  // the GET, reused for every scrape
  std::optional<tcp::endpoint> literal;   // the target when its host is an IP literal
  uint64_t scrape = 0;                    // number of the scrape in progress (deadline check)
  bool timed_out = false;                 // the deadline fired during this scrape
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

// The TLS handshake of a new connection to an https:// backend, within the
// scrape's deadline. Fills `out` on failure.
Task<bool> handshake(const MonitorTarget& target, ScrapeConnection& c, Attempt& out) {
  c.tls = std::make_unique<ssl::stream<tcp::socket&>>(c.socket, *target.tls);
  prepare_client_handshake(c.tls->native_handle(), target.host);
  auto [ec] = co_await c.tls->async_handshake(ssl::stream_base::client, kAsTuple);
  if (!ec) co_return true;
  beast::error_code ignored;
  c.socket.close(ignored);
  out.problem = c.timed_out ? "timeout" : "tls";
  co_return false;
}

// Opens the connection within the scrape's deadline. Fills `out` on failure.
Task<bool> open_connection(const Shared& sh, const MonitorTarget& target, ScrapeConnection& c,
                   Attempt& out) {
  std::vector<tcp::endpoint> endpoints;
  if (c.literal) {
    endpoints.push_back(*c.literal);
  } else {
    const std::string port = std::to_string(target.port);
    auto [ec, results] = co_await c.resolver.async_resolve(target.host, port, kAsTuple);
    if (ec) {
      out.problem = c.timed_out ? "timeout" : "resolve";
      co_return false;
    }
    for (const auto& r : results) endpoints.push_back(r.endpoint());
  }
  // One endpoint at a time: a deadline that closes the socket must end the
  // attempt, not move on to the next address.
  for (const auto& endpoint : endpoints) {
    if (c.timed_out || sh.stopped.load()) break;
    auto [ec] = co_await c.socket.async_connect(endpoint, kAsTuple);
    if (!ec) {
      beast::error_code ignored;
      c.socket.set_option(tcp::no_delay(true), ignored);
      c.buffer.clear();
      out.connected = true;
      if (!target.tls) co_return true;
      const bool secured = co_await handshake(target, c, out);
      co_return secured;
    }
    beast::error_code ignored;
    c.socket.close(ignored);
  }
  out.problem = c.timed_out ? "timeout" : "connect";
  co_return false;
}

// One request/response on the connection (opened first when closed). A
// reused connection that fails before any response byte (the engine closed
// it while idle) is retried once on a fresh one. Fills `out`.
Task<void> exchange(const Shared& sh, const MonitorTarget& target, ScrapeConnection& c,
                    Attempt& out) {
  for (int round = 0; round < 2; ++round) {
    const bool reused = c.socket.is_open();
    if (!reused && !co_await open_connection(sh, target, c, out)) co_return;
    if (sh.stopped.load()) break;
    beast::error_code write_ec;
    if (c.tls) {
      auto [ec, written] = co_await http::async_write(*c.tls, c.request, kAsTuple);
      write_ec = ec;
    } else {
      auto [ec, written] = co_await http::async_write(c.socket, c.request, kAsTuple);
      write_ec = ec;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    beast::error_code read_ec = write_ec;
    if (!write_ec && c.tls) {
      auto [ec, read] = co_await http::async_read(*c.tls, c.buffer, parser, kAsTuple);
      read_ec = ec;
    } else if (!write_ec) {
      auto [ec, read] = co_await http::async_read(c.socket, c.buffer, parser, kAsTuple);
      read_ec = ec;
    }
    if (read_ec) {
      beast::error_code ignored;
      c.socket.close(ignored);
      if (reused && !parser.got_some() && !c.timed_out) continue;
      if (c.timed_out) out.problem = "timeout";
      else if (read_ec == http::error::end_of_stream || write_ec) out.problem = "closed";
      else out.problem = "read";
      co_return;
    }
    const auto& response = parser.get();
    if (!response.keep_alive()) {
      beast::error_code ignored;
      c.socket.close(ignored);
    }
    const unsigned status = response.result_int();
    if (status == 200) out.load = parse_engine_load(response.body());
    out.outcome = classify_answer(status, out.load);
    if (out.outcome == ScrapeOutcome::kFailed) out.problem = "status";
    else if (out.outcome == ScrapeOutcome::kUnusable) out.problem = status == 200 ? "no_figures" : "status";
    co_return;
  }
  out.problem = "closed";
}

// One scrape under `timeout`.
Task<void> scrape_once(const Shared& sh, const MonitorTarget& target,
                       const std::shared_ptr<ScrapeConnection>& conn, std::chrono::milliseconds timeout,
                       Attempt& out) {
  ScrapeConnection& c = *conn;
  ++c.scrape;
  c.timed_out = false;
  c.deadline.expires_after(timeout);
  std::weak_ptr<ScrapeConnection> weak = conn;
  c.deadline.async_wait([weak, id = c.scrape](const beast::error_code& ec) {
    if (ec) return;
    auto live = weak.lock();
    if (!live || live->scrape != id) return;
    live->timed_out = true;
    beast::error_code ignored;
    live->socket.close(ignored);
    live->resolver.cancel();
  });
  co_await exchange(sh, target, c, out);
  c.deadline.cancel();
  // No answer within the deadline: slow or hung, not refused.
  if (c.timed_out && out.outcome == ScrapeOutcome::kFailed) out.outcome = ScrapeOutcome::kSilent;
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
    co_await scrape_once(*sh, slot.target, conn, timeout, attempt);
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
