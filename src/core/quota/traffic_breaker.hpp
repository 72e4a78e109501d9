// A tenant's traffic breaker: what it asks for (admitted or refused alike)
// against its quota rate, as a stage the gateway acts on. Green is normal;
// yellow (over throttle_at x quota) throttles; orange (over degrade_at)
// degrades (smaller max_tokens, lower priority); red (over block_at) refuses
// everything for a back-off, so a runaway client cannot swamp the queues
// with requests that would only be refused one by one.
//
// Stepping up is immediate. Stepping down from yellow or orange waits until
// the demand has stayed at or below that stage's threshold for `hold`, so a
// demand that oscillates around a threshold does not flap. Red lasts a
// back-off (base_backoff, doubled on each consecutive trip, capped at
// max_backoff), then is half-open for one window: the window starts afresh,
// 1 request in probe_every goes through, and the breaker trips again the
// moment the fresh demand is over block_at; a probe that ends without that
// steps straight down to the stage its demand then calls for. The back-off
// goes back to base once the breaker has stayed out of red for the longer
// of the last back-off and the window.
//
// Demand is measured over a sliding window of `window`, kept as 10 slices
// and one more for the slice leaving it, whose share is taken pro rata: a
// steady rate reads as itself, and a breaker is a few hundred bytes however
// busy its tenant. Between calls the demand only decays, so when it falls
// under a threshold is computed, not sampled: a tenant back after a quiet
// spell finds the stage it would have had, not a stale one.
//
// Pure and single-threaded: the caller passes the time (steady_clock's, so
// after its epoch; one earlier than before is taken as the latest seen) and
// serialises calls. Changes that come with time (a back-off's end, a hold)
// are applied by the first call that finds them due, dated when they fell
// due.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/quota/gcra.hpp"
#include "core/quota/quota_config.hpp"

namespace arbiter::quota {

enum class TrafficStage : uint8_t { kGreen, kYellow, kOrange, kRed };
std::string_view stage_name(TrafficStage stage);  // "green", "yellow", "orange", "red"


// What is wrong with the settings, if anything.
std::optional<std::string> validate(const TrafficBreakerSettings& s);

struct TrafficTransition {
  TimePoint at;
  TrafficStage from, to;
  double demand_ratio;  // at that moment
  // Into red: the back-off it starts; otherwise zero. A trip from half-open
  // is red -> red with its new back-off.
  Duration backoff;
};

class TrafficBreaker {
 public:
  // `s` valid, quota_per_second > 0, in the unit of on_request's `amount`.
  TrafficBreaker(TrafficBreakerSettings s, double quota_per_second);

  struct Verdict {
    TrafficStage stage;
    bool admit;  // false only in red: while blocked, and for non-probe requests while half-open
    // When refused: the back-off left, or, half-open, until the probe ends;
    // zero when admitted.
    Duration retry_after;
  };
  // A request asked for `amount` >= 0 (1 to count requests, or its tokens).
  // It counts as demand whether or not it is admitted.
  Verdict on_request(TimePoint now, double amount);
  // The stage at `now`, once any change due by then is applied.
  TrafficStage stage(TimePoint now);
  // Demand over the window / (quota_per_second * window). Half-open, only
  // what was asked since the probe began.
  double demand_ratio(TimePoint now) const;
  // The transitions since the last call, oldest first, for the caller to
  // log and count.
  std::vector<TrafficTransition> take_transitions();

 private:
  static constexpr int64_t kSlices = 10;          // the window's slices
  static constexpr int64_t kSlots = kSlices + 1;  // and the one leaving it

  // Applies what fell due by `now` and moves the window to it.
  void advance(TimePoint now);
  // After demand rose at `now` (or the probe ended): notes when it will
  // fall under each threshold if nothing more is asked.
  void observe(TimePoint now, double ratio);
  void trip(TimePoint now, double ratio);
  void change(TimePoint at, TrafficStage to, double ratio, Duration backoff = {});

  int64_t slot_of(TimePoint t) const { return t.time_since_epoch() / slice_; }
  TimePoint slot_start(int64_t i) const { return TimePoint(i * slice_); }
  // What was asked in slot i; zero outside the slots kept.
  double asked(int64_t i) const;
  // Demand (in units, not a ratio) at t >= last_, nothing asked since last_.
  double demand_at(TimePoint t) const;
  // The first time from `from` on when the demand is at or below `units`.
  TimePoint falls_to(double units, TimePoint from) const;

  TrafficBreakerSettings s_;
  Duration slice_;   // window / kSlices
  double capacity_;  // quota over the window, in units
  std::array<double, kSlots> slots_{};
  int64_t head_ = 0;  // slot of last_: the newest kept
  TimePoint last_{};  // the latest time seen
  TrafficStage stage_ = TrafficStage::kGreen;
  // For yellow and orange: when the demand falls (fell) to their threshold,
  // as of the last rise. The hold counts from there.
  std::array<TimePoint, 2> falls_at_{};
  Duration backoff_{};  // of the last trip; zero once calm: the next is base_backoff
  TimePoint blocked_until_{}, probe_until_{}, left_red_{};
  bool probing_ = false;
  uint32_t probe_count_ = 0;  // requests seen while half-open
  std::vector<TrafficTransition> transitions_;
};

}  // namespace arbiter::quota
