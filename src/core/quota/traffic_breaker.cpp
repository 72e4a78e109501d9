#include "core/quota/traffic_breaker.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace arbiter::quota {

namespace {

using Seconds = std::chrono::duration<double>;

TrafficStage called_for(const TrafficBreakerSettings& s, double ratio) {
  if (ratio > s.block_at) return TrafficStage::kRed;
  if (ratio > s.degrade_at) return TrafficStage::kOrange;
  if (ratio > s.throttle_at) return TrafficStage::kYellow;
  return TrafficStage::kGreen;
}

// Yellow and orange, the stages with a hold: their threshold and their
// place in falls_at_.
double threshold(const TrafficBreakerSettings& s, TrafficStage stage) {
  return stage == TrafficStage::kYellow ? s.throttle_at : s.degrade_at;
}
std::size_t held(TrafficStage stage) { return static_cast<std::size_t>(stage) - 1; }

TrafficStage below(TrafficStage stage) {
  return static_cast<TrafficStage>(static_cast<uint8_t>(stage) - 1);
}

}  // namespace

std::string_view stage_name(TrafficStage stage) {
  switch (stage) {
    case TrafficStage::kGreen: return "green";
    case TrafficStage::kYellow: return "yellow";
    case TrafficStage::kOrange: return "orange";
    case TrafficStage::kRed: return "red";
  }
  return "?";
}

std::optional<std::string> validate(const TrafficBreakerSettings& s) {
  if (!(s.throttle_at > 0)) return "traffic breaker: throttle_at must be > 0";
  if (!(s.throttle_at < s.degrade_at && s.degrade_at < s.block_at))
    return "traffic breaker: thresholds must increase: throttle_at < degrade_at < block_at";
  if (!std::isfinite(s.block_at)) return "traffic breaker: block_at must be finite";
  if (s.window < std::chrono::milliseconds(1))
    return "traffic breaker: window must be at least 1 ms";
  if (s.hold < Duration::zero()) return "traffic breaker: hold must be >= 0";
  if (s.base_backoff <= Duration::zero()) return "traffic breaker: base_backoff must be > 0";
  if (s.max_backoff < s.base_backoff) return "traffic breaker: max_backoff must be >= base_backoff";
  if (s.probe_every == 0) return "traffic breaker: probe_every must be >= 1";
  return std::nullopt;
}

TrafficBreaker::TrafficBreaker(TrafficBreakerSettings s, double quota_per_second)
    : s_(s),
      slice_(s.window / kSlices),
      capacity_(quota_per_second * Seconds(slice_ * kSlices).count()) {}

TrafficBreaker::Verdict TrafficBreaker::on_request(TimePoint now, double amount) {
  now = std::max(now, last_);
  advance(now);
  slots_[head_ % kSlots] += amount;
  const double ratio = demand_at(now) / capacity_;
  observe(now, ratio);
  const TrafficStage wanted = called_for(s_, ratio);
  if (wanted == TrafficStage::kRed && (stage_ != TrafficStage::kRed || probing_)) {
    trip(now, ratio);
  } else if (wanted > stage_) {
    change(now, wanted, ratio);
  }

  if (stage_ != TrafficStage::kRed) return {stage_, true, Duration::zero()};
  if (!probing_) return {stage_, false, blocked_until_ - now};
  // Half-open: the first request goes through, then 1 in probe_every.
  const bool probe = probe_count_++ % s_.probe_every == 0;
  return {stage_, probe, probe ? Duration::zero() : probe_until_ - now};
}

TrafficStage TrafficBreaker::stage(TimePoint now) {
  advance(std::max(now, last_));
  return stage_;
}

double TrafficBreaker::demand_ratio(TimePoint now) const {
  now = std::max(now, last_);
  // A probe that began since the last call starts from nothing.
  if (stage_ == TrafficStage::kRed && !probing_ && now >= blocked_until_) return 0;
  return demand_at(now) / capacity_;
}

std::vector<TrafficTransition> TrafficBreaker::take_transitions() {
  return std::exchange(transitions_, {});
}

void TrafficBreaker::advance(TimePoint now) {
  // Each change that fell due since the last call, in order; each may make
  // the next one due (a probe's end after its start, a hold after a step).
  for (;;) {
    if (stage_ == TrafficStage::kRed) {
      if (!probing_ && now >= blocked_until_) {
        // Half-open: the demand is measured afresh, over one window.
        slots_.fill(0);
        probing_ = true;
        probe_until_ = blocked_until_ + slice_ * kSlices;
        probe_count_ = 0;
      } else if (probing_ && now >= probe_until_) {
        // Demand over block_at trips at once, so a probe that lasted its
        // window ends below it: step down to what the demand calls for.
        const double ratio = demand_at(probe_until_) / capacity_;
        probing_ = false;
        left_red_ = probe_until_;
        change(probe_until_, called_for(s_, ratio), ratio);
        observe(probe_until_, ratio);
      } else {
        break;
      }
    } else if (stage_ != TrafficStage::kGreen && now >= falls_at_[held(stage_)] + s_.hold) {
      // falls_at_ for yellow is never before orange's (a lower threshold is
      // reached later), so a step to yellow is never dated before this one.
      const TimePoint at = falls_at_[held(stage_)] + s_.hold;
      change(at, below(stage_), demand_at(at) / capacity_);
    } else {
      break;
    }
  }
  // Out of red long enough that a new trip is a new episode, not the same
  // demand back: as long as the last back-off, and a window, so that what
  // tripped it has left the measure.
  if (stage_ != TrafficStage::kRed && now - left_red_ >= std::max(backoff_, s_.window))
    backoff_ = Duration::zero();

  const int64_t slot = slot_of(now);
  for (int64_t i = std::max(head_ + 1, slot - kSlots + 1); i <= slot; ++i) slots_[i % kSlots] = 0;
  head_ = slot;
  last_ = now;
}

void TrafficBreaker::observe(TimePoint now, double ratio) {
  for (TrafficStage stage : {TrafficStage::kYellow, TrafficStage::kOrange}) {
    const double at = threshold(s_, stage);
    if (ratio > at) falls_at_[held(stage)] = falls_to(at * capacity_, now);
  }
}

void TrafficBreaker::trip(TimePoint now, double ratio) {
  backoff_ =
      backoff_ == Duration::zero() ? s_.base_backoff : std::min(2 * backoff_, s_.max_backoff);
  blocked_until_ = now + backoff_;
  probing_ = false;
  change(now, TrafficStage::kRed, ratio, backoff_);
}

void TrafficBreaker::change(TimePoint at, TrafficStage to, double ratio, Duration backoff) {
  transitions_.push_back(
      {.at = at, .from = stage_, .to = to, .demand_ratio = ratio, .backoff = backoff});
  stage_ = to;
}

double TrafficBreaker::asked(int64_t i) const {
  if (i < 0 || i > head_ || i <= head_ - kSlots) return 0;
  return slots_[i % kSlots];
}

double TrafficBreaker::demand_at(TimePoint t) const {
  // The window (t - slice * kSlices, t] holds all of the last kSlices slots
  // (the newest partly elapsed) and the rest of the one before, pro rata.
  const int64_t slot = slot_of(t);
  double units = 0;
  for (int64_t i = slot - kSlices + 1; i <= slot; ++i) units += asked(i);
  const double elapsed =
      static_cast<double>((t - slot_start(slot)).count()) / static_cast<double>(slice_.count());
  return units + asked(slot - kSlices) * (1 - elapsed);
}

TimePoint TrafficBreaker::falls_to(double units, TimePoint from) const {
  // Nothing is asked after `from`, so within a slot the demand is the whole
  // slots plus the leaving one's share, which drains linearly; it reaches
  // zero kSlots after head_ at the latest (units > 0).
  for (int64_t slot = slot_of(from);; ++slot) {
    double whole = 0;
    for (int64_t i = slot - kSlices + 1; i <= slot; ++i) whole += asked(i);
    if (whole > units) continue;
    const double leaving = asked(slot - kSlices);
    // The elapsed share of the slot at which whole + leaving * (1 - share) == units.
    const double share = leaving > 0 ? std::max(0.0, 1 - (units - whole) / leaving) : 0;
    const Duration into(
        static_cast<Duration::rep>(std::ceil(share * static_cast<double>(slice_.count()))));
    return std::max(from, slot_start(slot) + into);
  }
}

}  // namespace arbiter::quota
