// Outlier ejection for the backends of one pool, in the manner of Envoy's
// outlier detection: a backend that fails `consecutive_failures` exchanges
// in a row, or whose failure share over `window` reaches `failure_rate` (with
// at least `min_requests` exchanges), is ejected: it takes no new work for
// base_ejection x its ejection count, capped at max_ejection. Ejections are
// refused past max_ejected_share of the pool (one is always allowed). When
// an ejection ends the backend waits for an active health probe
// (probe_on_return): a good probe returns it, a failed one ejects it again
// for longer. A returned backend ramps up over slow_start, from 10% of its
// slots to all of them.
//
// The ejection count falls by one for each `window` a backend spends back in
// service (Envoy: one per clean `interval` sweep), so a backend that failed
// once long ago starts again from base_ejection.
//
// A Retry-After from the backend (hold) is not a failure: it excludes the
// backend until then without raising its count, and ends without a probe.
//
// Pure and single-threaded: the caller passes the time (steady_clock's; one
// earlier than the latest seen is taken as the latest) and serialises calls.
// Each call applies what fell due by its `now`, dated when it fell due. Every
// call walks the pool's backends: O(backends), fine for pools of tens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/resilience/sliding_count.hpp"

namespace arbiter::resilience {

// The failure-rate rule ejects only a backend failing at least this many
// times as often as its healthy peers together (when they have the volume).
inline constexpr double kPeerFactor = 2.0;

struct OutlierConfig {
  uint32_t consecutive_failures = 5;  // in a row eject; 0: rule off
  double failure_rate = 0.1;          // share of failures over `window` that ejects; off when > 1
  uint32_t min_requests = 10;         // volume within the window before the rate rule applies
  Duration window = std::chrono::seconds(10);         // the rate's measure; the count's decay step
  Duration base_ejection = std::chrono::seconds(5);   // ejection time = base x ejection count ...
  Duration max_ejection = std::chrono::seconds(300);  // ... capped here
  // Of a pool's backends excluded at once; one may always be.
  double max_ejected_share = 0.5;
  // After returning, capacity ramps up over this; 0: off.
  Duration slow_start = std::chrono::seconds(10);
  bool probe_on_return = true;  // an ejection's end waits for an active health probe's verdict
};

// What is wrong with the config, if anything.
std::optional<std::string> validate(const OutlierConfig& c);

enum class BackendHealthState : uint8_t { kHealthy, kEjected, kProbing, kSlowStart };
// "healthy", "ejected", "probing", "slow_start"
std::string_view state_name(BackendHealthState state);

// Why a transition happened (OutlierTransition::reason).
namespace outlier_reason {
inline constexpr std::string_view kConsecutiveFailures = "consecutive_failures";
inline constexpr std::string_view kFailureRate = "failure_rate";
inline constexpr std::string_view kProbeFailed = "probe_failed";
inline constexpr std::string_view kRetryAfter = "retry_after";
inline constexpr std::string_view kEjectionEnded = "ejection_ended";
inline constexpr std::string_view kProbeOk = "probe_ok";
inline constexpr std::string_view kSlowStartEnded = "slow_start_ended";
}  // namespace outlier_reason

struct OutlierTransition {
  uint32_t backend;
  BackendHealthState from, to;
  TimePoint at;             // when it fell due
  Duration ejection;        // into kEjected: its length; otherwise zero
  std::string_view reason;  // one of outlier_reason's
};

class OutlierDetector {
 public:
  // `config` valid; backends numbered 0 .. backends - 1.
  OutlierDetector(OutlierConfig config, uint32_t backends);

  // One finished upstream exchange on `backend`: a failure (5xx, connect
  // error, first-byte or stream-idle timeout: the caller classifies) or a
  // success. May eject. An exchange that ends while its backend is excluded
  // was sent before; it decides nothing.
  void record(uint32_t backend, bool failure, TimePoint now);
  // The backend answered 429/503 with Retry-After: it takes nothing new
  // until `until` (capped by the caller). Not a failure: the ejection count
  // stays. Shows as kEjected with reason "retry_after" and ends without a
  // probe (unless it interrupted one, which is then asked for again). An
  // ejection already running past `until` is left as it is; one ending
  // sooner is extended.
  void hold(uint32_t backend, TimePoint until, TimePoint now);
  // Applies what fell due by `now`: an ejection's end moves the backend to
  // kProbing (probe_on_return) or straight back (kSlowStart, or kHealthy
  // without slow start); slow start's end to kHealthy.
  void advance(TimePoint now);
  // Backends now in kProbing whose probe has not been asked for yet; each
  // once: the caller sends one probe per entry, and reports it through
  // probe_result (a probe that times out is a failed one).
  std::vector<uint32_t> take_probe_requests();
  // An active health probe's verdict. In kProbing it decides the return: ok
  // -> slow start (or healthy), failed -> ejected again, for the next longer
  // time. A probe of a backend in service counts as a record(); one of a
  // backend in kEjected is stale and ignored.
  void probe_result(uint32_t backend, bool ok, TimePoint now);

  // Takes no new work (kEjected or kProbing). Panic mode (every backend
  // excluded) is the caller's.
  bool excluded(uint32_t backend) const;
  // Share of its slots a backend may use at `now`: 0 while excluded; in slow
  // start 0.1 at its start rising linearly to 1 at its end; 1 otherwise.
  double capacity_fraction(uint32_t backend, TimePoint now) const;
  BackendHealthState state(uint32_t backend) const;
  uint32_t ejection_count(uint32_t backend) const;   // the current multiplier
  uint64_t ejections_total(uint32_t backend) const;  // monotonic, for metrics
  // Ejections refused because max_ejected_share was reached, pool-wide.
  uint64_t ejections_refused_total() const { return refused_; }
  // The earliest time worth another advance(): an ejection's end, or slow
  // start's next tenth of capacity (or its end). None while nothing is due
  // but probes.
  std::optional<TimePoint> next_change() const;
  // kEjected: when it ends.
  std::optional<TimePoint> ejected_until(uint32_t backend) const;
  // The transitions since the last call, oldest first.
  std::vector<OutlierTransition> take_transitions();

 private:
  struct Backend {
    explicit Backend(Duration window) : requests(window), failures(window) {}
    BackendHealthState state = BackendHealthState::kHealthy;
    uint32_t consecutive = 0;  // failures in a row
    SlidingCount requests, failures;
    uint32_t ejections = 0;        // the multiplier
    uint64_t ejections_total = 0;  // for metrics
    TimePoint until{};             // kEjected: its end; kSlowStart: its end
    TimePoint since{};             // kSlowStart: its start
    TimePoint decay_from{};        // in service: the count's next step counts from here
    bool held = false;             // kEjected by a Retry-After, not by failures
    bool owes_probe = false;       // kEjected: its end waits for a probe
    bool probe_wanted = false;     // kProbing: not yet handed out
  };

  // One exchange's outcome at last_ (record(), or a probe of a backend in
  // service).
  void observe(uint32_t id, bool failure);
  // Applies what fell due for backend `id` by last_ (see advance()).
  void settle(uint32_t id);
  // The rule the failures so far break, if any.
  std::optional<std::string_view> broken_rule(const Backend& b) const;
  // max_ejected_share leaves room for one more.
  bool may_eject() const;
  void eject(uint32_t id, TimePoint at, std::string_view reason);
  // Back in service at `at`: slow start first, if configured.
  void bring_back(uint32_t id, TimePoint at, std::string_view reason);
  void change(uint32_t id, BackendHealthState to, TimePoint at, std::string_view reason,
              Duration ejection = {});
  // Out for failures: an ejection (or a hold over one) and its probe. The
  // count does not decay meanwhile.
  static bool out_for_failures(const Backend& b);

  OutlierConfig config_;
  uint32_t max_ejection_count_;  // the count past which the time no longer grows
  std::vector<Backend> backends_;
  TimePoint last_{};  // the latest time seen
  uint64_t refused_ = 0;
  std::vector<OutlierTransition> transitions_;
};

}  // namespace arbiter::resilience
