#include "core/resilience/model_breaker.hpp"

#include <algorithm>
#include <utility>

namespace arbiter::resilience {

std::string_view stage_name(BreakerStage stage) {
  switch (stage) {
    case BreakerStage::kClosed:
      return "closed";
    case BreakerStage::kDegraded:
      return "degraded";
    case BreakerStage::kFallback:
      return "fallback";
    case BreakerStage::kIsolated:
      return "isolated";
  }
  return "?";
}

std::optional<std::string> validate(const ModelBreakerConfig& c) {
  if (c.window < std::chrono::milliseconds(1)) return "model breaker: window must be at least 1 ms";
  if (c.min_requests == 0) return "model breaker: min_requests must be >= 1";
  if (!(c.degrade_at > 0 && c.degrade_at < c.fallback_at && c.fallback_at < c.isolate_at &&
        c.isolate_at <= 1))
    return "model breaker: thresholds must increase within (0, 1]: "
           "0 < degrade_at < fallback_at < isolate_at <= 1";
  if (c.base_open <= Duration::zero()) return "model breaker: base_open must be > 0";
  if (c.max_open < c.base_open) return "model breaker: max_open must be >= base_open";
  if (c.probe_requests == 0) return "model breaker: probe_requests must be >= 1";
  return std::nullopt;
}

ModelBreaker::ModelBreaker(ModelBreakerConfig config)
    : config_(config), requests_(config.window), failures_(config.window) {}

BreakerRoute ModelBreaker::route(TimePoint now) {
  advance(now);
  if (half_open_ && trials_out_ < config_.probe_requests) {
    ++trials_out_;
    return {.target = BreakerTarget::kPrimary,
            .trial = true,
            .retry_after = Duration::zero(),
            .epoch = epoch_};
  }
  const BreakerTarget target = stage_target();
  Duration retry_after{};
  // Half-open, the trials decide when; base_open is the soonest it may be.
  if (target == BreakerTarget::kRefuse)
    retry_after = half_open_ ? config_.base_open : open_until_ - last_;
  return {.target = target, .trial = false, .retry_after = retry_after, .epoch = epoch_};
}

void ModelBreaker::record(const BreakerRoute& route, bool failure, TimePoint now) {
  advance(now);
  if (route.epoch < stage_epoch_) return;  // routed under an earlier stage
  requests_.add(last_);
  if (failure) failures_.add(last_);
  if (const BreakerStage wanted = called_for(last_); wanted > stage_) {
    open(wanted, last_);
    return;
  }
  // A trial of an earlier half-open (opened again since) decides nothing.
  if (!route.trial || !half_open_ || route.epoch != epoch_) return;
  if (failure) {
    open(stage_, last_);
  } else if (++trials_ok_ == config_.probe_requests) {
    close(last_);
  }
}

void ModelBreaker::release(const BreakerRoute& route, TimePoint now) {
  advance(now);
  if (route.trial && half_open_ && route.epoch == epoch_ && trials_out_ > 0) --trials_out_;
}

BreakerStage ModelBreaker::stage(TimePoint now) {
  advance(now);
  return stage_;
}

double ModelBreaker::error_rate(TimePoint now) const {
  now = std::max(now, last_);
  const uint64_t requests = requests_.count(now);
  if (requests == 0) return 0;
  return static_cast<double>(failures_.count(now)) / static_cast<double>(requests);
}

uint64_t ModelBreaker::window_requests(TimePoint now) const {
  return requests_.count(std::max(now, last_));
}

std::vector<BreakerTransition> ModelBreaker::take_transitions() {
  return std::exchange(transitions_, {});
}

void ModelBreaker::advance(TimePoint now) {
  last_ = std::max(last_, now);
  if (stage_ != BreakerStage::kClosed && !half_open_ && last_ >= open_until_) {
    half_open_ = true;
    trials_out_ = trials_ok_ = 0;
    ++epoch_;
    change(stage_, open_until_, Duration::zero(), true);
  }
  // Closed long enough that a new trip is a new episode: as long as the last
  // opening, and a window, so that what tripped it has left the measure.
  if (stage_ == BreakerStage::kClosed && last_ - closed_at_ >= std::max(config_.window, open_))
    open_ = Duration::zero();
  // The window slides between calls: successes leaving it can raise the rate.
  if (const BreakerStage wanted = called_for(last_); wanted > stage_) open(wanted, last_);
}

BreakerStage ModelBreaker::called_for(TimePoint now) const {
  if (window_requests(now) < config_.min_requests) return BreakerStage::kClosed;
  // Quotients compared, not products: 1 / 20 is the double 0.05 is.
  const double rate = error_rate(now);
  if (rate >= config_.isolate_at) return BreakerStage::kIsolated;
  if (rate >= config_.fallback_at) return BreakerStage::kFallback;
  if (rate >= config_.degrade_at) return BreakerStage::kDegraded;
  return BreakerStage::kClosed;
}

void ModelBreaker::open(BreakerStage to, TimePoint at) {
  open_ = open_ == Duration::zero() ? config_.base_open : std::min(2 * open_, config_.max_open);
  open_until_ = at + open_;
  half_open_ = false;
  ++epoch_;
  const bool new_stage = to != stage_;
  change(to, at, open_, false);
  if (new_stage) {
    requests_.clear();
    failures_.clear();
    stage_epoch_ = epoch_;
  }
}

void ModelBreaker::backend_recovered(TimePoint now) {
  advance(now);
  if (stage_ == BreakerStage::kClosed || half_open_) return;
  open_until_ = last_;
  advance(last_);
}

bool ModelBreaker::waiting_open(TimePoint now) {
  advance(now);
  return stage_ != BreakerStage::kClosed && !half_open_;
}

void ModelBreaker::close(TimePoint at) {
  change(BreakerStage::kClosed, at, Duration::zero(), false);
  requests_.clear();
  failures_.clear();
  half_open_ = false;
  stage_epoch_ = ++epoch_;
  closed_at_ = at;
}

void ModelBreaker::change(BreakerStage to, TimePoint at, Duration open_for, bool half_open) {
  transitions_.push_back({.from = stage_,
                          .to = to,
                          .at = at,
                          .error_rate = error_rate(last_),
                          .open_for = open_for,
                          .half_open = half_open});
  stage_ = to;
}

BreakerTarget ModelBreaker::stage_target() const {
  switch (stage_) {
    case BreakerStage::kClosed:
      return BreakerTarget::kPrimary;
    case BreakerStage::kDegraded:
      return config_.has_degraded ? BreakerTarget::kDegraded : BreakerTarget::kPrimary;
    case BreakerStage::kFallback:
      return config_.has_fallback ? BreakerTarget::kFallback : BreakerTarget::kPrimary;
    case BreakerStage::kIsolated:
      return BreakerTarget::kRefuse;
  }
  return BreakerTarget::kRefuse;
}

}  // namespace arbiter::resilience
