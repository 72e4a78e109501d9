// A model's error-rate breaker with staged fallbacks. As its error rate
// over `window` (with at least min_requests requests) reaches degrade_at,
// fallback_at and isolate_at, the model's requests go to its degraded
// (quantised) variant, then to its fallback model, then nowhere (refused).
// The stage is the highest threshold reached: a jump straight to isolated is
// allowed. A stage the model does not declare (has_degraded, has_fallback)
// still shows, but its requests go to the primary; isolation always refuses.
//
// The error rate is that of the model's requests as clients see them,
// whichever variant served them, so a variant that fails too keeps the rate
// rising and the breaker escalates. Each stage change starts the measure
// afresh: only requests routed since (BreakerRoute::epoch) count, so the
// primary's failures that tripped the breaker, still finishing after the
// switch, cannot push it a stage further. Between requests the window only
// slides; escalation is checked whenever the breaker is asked.
//
// A stage above closed is open for base_open x 2^(consecutive openings - 1),
// capped at max_open (each escalation and each failed half-open is an
// opening). Then it is half-open: the next probe_requests requests go to the
// primary as trials (the rest still where the stage says); all succeed ->
// closed, window cleared; one fails -> the same stage opens again, for
// twice as long. The back-off returns to base_open once the breaker has
// stayed closed for the longer of the window and the last opening.
//
// Pure and single-threaded: the caller passes the time (steady_clock's; one
// earlier than the latest seen is taken as the latest) and serialises calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/resilience/sliding_count.hpp"

namespace arbiter::resilience {

// What an operator sets for every model's breaker (the config's
// model_breaker section holds these and `enabled`).
struct ModelBreakerTunables {
  Duration window = std::chrono::seconds(30);  // the error rate's measure
  uint32_t min_requests = 20;                  // in the window before any stage trips
  double degrade_at = 0.05, fallback_at = 0.10, isolate_at = 0.20;  // error rates, each a stage
  // An opening lasts base_open x 2^(consecutive openings - 1), up to max_open.
  Duration base_open = std::chrono::seconds(5), max_open = std::chrono::seconds(300);
  uint32_t probe_requests = 3;  // half-open: trial requests to the primary, all must succeed
};

// One model's breaker: the tunables and what the model declares.
struct ModelBreakerConfig : ModelBreakerTunables {
  bool has_degraded = false, has_fallback = false;  // whether the model declares them
};

// What is wrong with the config, if anything.
std::optional<std::string> validate(const ModelBreakerConfig& c);

enum class BreakerStage : uint8_t { kClosed, kDegraded, kFallback, kIsolated };
// "closed", "degraded", "fallback", "isolated"
std::string_view stage_name(BreakerStage stage);

enum class BreakerTarget : uint8_t { kPrimary, kDegraded, kFallback, kRefuse };

struct BreakerRoute {
  BreakerTarget target;
  bool trial;            // a half-open trial to the primary
  Duration retry_after;  // kRefuse: until the next half-open (base_open while half-open)
  uint64_t epoch = 0;    // the breaker's, when routed: record() tells stale outcomes by it
};

struct BreakerTransition {
  BreakerStage from, to;
  TimePoint at;       // when it fell due
  double error_rate;  // over the window, when the change was applied
  Duration open_for;  // into an open stage (or opened again): its length; otherwise zero
  bool half_open;     // the opening ended: trials begin (from == to)
};

class ModelBreaker {
 public:
  // `config` valid.
  explicit ModelBreaker(ModelBreakerConfig config);

  // Where a new request of this model goes now.
  BreakerRoute route(TimePoint now);
  // How a request routed by route() ended, from the client's point of view
  // (failure: the backend failed it: 5xx, connect, timeouts, no live
  // backend; never 4xx or a client's cancel). `route` is what route()
  // returned for it.
  void record(const BreakerRoute& route, bool failure, TimePoint now);
  // A request routed by route() that never reached a model: refused by a
  // later admission stage (a quota, say), so it is not recorded. A trial of
  // the current half-open goes back: the next request is sent as the trial
  // instead, or the breaker would wait for ever for an outcome that never
  // comes. Anything else is a no-op.
  void release(const BreakerRoute& route, TimePoint now);
  // An active probe found a backend of the model answering: an opening
  // ends now and the half-open trials decide, so a model whose engine came
  // back from a crash does not wait out its back-off. No-op unless open.
  void backend_recovered(TimePoint now);
  // Open and not yet half-open at `now`: requests go where the stage says,
  // none to the primary.
  bool waiting_open(TimePoint now);
  // The stage at `now`, once what fell due is applied.
  BreakerStage stage(TimePoint now);
  // Failures / requests over the window, among requests routed since the
  // stage last changed; 0 without any.
  double error_rate(TimePoint now) const;
  // The requests error_rate is over (min_requests of them trip a stage).
  uint64_t window_requests(TimePoint now) const;
  // The transitions since the last call, oldest first.
  std::vector<BreakerTransition> take_transitions();

 private:
  // Applies what fell due by `now`: an opening's end, the back-off's reset,
  // and escalation by the rate.
  void advance(TimePoint now);
  // The highest stage whose threshold the rate reaches with enough volume.
  BreakerStage called_for(TimePoint now) const;
  // Opens `to` (higher than, or the same as, the stage) at `at`.
  void open(BreakerStage to, TimePoint at);
  void close(TimePoint at);
  void change(BreakerStage to, TimePoint at, Duration open_for, bool half_open);
  BreakerTarget stage_target() const;

  ModelBreakerConfig config_;
  SlidingCount requests_, failures_;
  BreakerStage stage_ = BreakerStage::kClosed;
  TimePoint last_{};          // the latest time seen
  uint64_t epoch_ = 0;        // bumped at each stage change and half-open
  uint64_t stage_epoch_ = 0;  // epoch_ at the last stage change: older outcomes are stale
  Duration open_{};           // the last opening's length; zero once calm
  TimePoint open_until_{};    // open, not half-open, until then
  TimePoint closed_at_{};     // for the back-off's reset
  bool half_open_ = false;
  uint32_t trials_out_ = 0, trials_ok_ = 0;  // this half-open's
  std::vector<BreakerTransition> transitions_;
};

}  // namespace arbiter::resilience
