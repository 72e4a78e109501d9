// Scrapes every backend's GET /metrics on a fixed period, each over its own
// keep-alive HTTP/1.1 connection (over TLS for an https:// backend), and reports the scheduler's signal for the
// backend (saturated / stale / down, rules in core/engine_metrics.hpp) when
// it changes. It only reports: what to do with a signal is the scheduler's.
//
// Threading: everything runs on one strand of the given executor, so the
// io_context may be run by any number of threads. The callback runs on that
// strand; snapshot() and stop() may be called from any thread.
//
// Per backend: a scrape starts every `interval` (fixed rate; at once when the
// previous one took longer). Each scrape has a deadline (a timer that closes
// the socket). After a failure the connection is dropped and reopened on the
// next attempt, which waits interval, 2x, 4x... up to max(interval,
// max_backoff). A ticker re-judges every backend each `interval`, so stale and
// the return from stale are seen even while no scrape completes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine_metrics.hpp"
#include "core/scheduler_types.hpp"
#include "http/asio.hpp"
#include "http/tls_context.hpp"

namespace arbiter {

// One backend to watch.
struct MonitorTarget {
  uint32_t pool = 0;     // scheduler pool id, echoed to the callback
  uint32_t backend = 0;  // backend index in the pool, echoed to the callback
  std::string host;      // IP literal or name (resolved at each connect)
  uint16_t port = 0;     // engine's HTTP port
  std::string name;      // for logs and metric labels (e.g. "host:port")
  TlsContext tls;        // an https:// backend's (http/tls_context.hpp); null: plain HTTP
};

struct MonitorOptions {
  std::chrono::milliseconds interval{100};  // scrape period per backend
  // Deadline of one scrape (connect + request + response); 0: min(5 x interval, 1 s).
  // It doubles after each scrape in a row that passed it without an answer,
  // and is at least twice what the last answer took, up to half of
  // rules.silence_before_down: a slow /metrics is waited for.
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds max_backoff{1000};  // longest wait between failed attempts
  std::string path = "/metrics";                // scraped target
  SignalRules rules;  // kv_threshold, max_waiting, stale_after, failures_before_down
  // Where a change of a backend's health (down, stale, up) is logged, one
  // JSON line each (gateway/engine_signal_log.hpp); empty: stderr.
  std::function<void(std::string_view line)> log;

  // The timeout actually used, after `silent` scrapes in a row that passed
  // it and a last answer that took `answered_in`.
  std::chrono::milliseconds effective_timeout(uint32_t silent = 0,
                                              std::chrono::steady_clock::duration answered_in = {}) const;
};

// Event counts of one backend, monotonic (exported as counters).
struct MonitorCounters {
  uint64_t scrapes_ok = 0;             // 200 with engine figures
  uint64_t scrapes_unusable = 0;       // answered without figures (404, 501, foreign body)
  uint64_t scrapes_failed = 0;         // no answer, timeout, or 502/503/504
  uint64_t connects = 0;               // connections opened (first one and reconnects)
  uint64_t saturated_transitions = 0;  // clear -> saturated
  uint64_t stale_transitions = 0;      // fresh -> stale (arbiter_backend_stale_total)
  uint64_t down_transitions = 0;       // up -> down

  MonitorCounters& operator+=(const MonitorCounters& other);
};

// One backend as the monitor sees it now.
struct BackendSnapshot {
  uint32_t pool = 0;                 // from its MonitorTarget
  uint32_t backend = 0;              // from its MonitorTarget
  std::string name;                  // from its MonitorTarget
  sched::BackendSignal signal;       // last verdict (the one last reported when it changed)
  MonitorState state;                // figures, last success, failure run
  MonitorCounters counters;          // event counts
  // Why the last scrape that was not kOk was not: timeout, resolve, connect,
  // closed, read, status, no_figures; "" if every scrape so far was kOk.
  std::string_view last_failure;
};

// Called on the monitor's strand when a backend's verdict changes, with the
// new verdict and the figures of its last successful scrape. The first call
// for a backend is its first change from the scheduler's default (all
// clear). Must not throw; keep it short (post heavier work elsewhere).
using SignalCallback = std::function<void(uint32_t pool, uint32_t backend,
                                          const sched::BackendSignal& signal,
                                          const EngineLoad& load)>;

class BackendMonitor {
 public:
  // `on_judged`, when given, is called like `on_change` but at every
  // judgement of a backend (each scrape and each tick), changed or not,
  // after on_change, with its latest successful scrape's figures (adaptive
  // capacity decides at this pace).
  BackendMonitor(net::any_io_executor executor, std::vector<MonitorTarget> targets,
                 MonitorOptions options, SignalCallback on_change, SignalCallback on_judged = {});
  // Calls stop(). Destroy the monitor before its io_context.
  ~BackendMonitor();
  BackendMonitor(const BackendMonitor&) = delete;
  BackendMonitor& operator=(const BackendMonitor&) = delete;

  // Spawns the scrape loops and the ticker; the first scrapes start at once.
  // Once only; a no-op after stop().
  void start();

  // Any thread, idempotent. Once it returns the callback is not running and
  // will not run again (unless stop() was called from inside the callback,
  // which then finishes normally). Timers are cancelled and sockets closed
  // on the strand, so the loops end as soon as the io_context runs them: a
  // run() with no other work returns.
  void stop();

  // Any thread: every backend, in target order.
  std::vector<BackendSnapshot> snapshot() const;

  // Any thread: the counters summed over backends.
  MonitorCounters totals() const;

  // Shared with the loops, which keep it alive until they end.
  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace arbiter
