#include "core/adaptive_capacity.hpp"

#include <algorithm>
#include <cmath>

namespace arbiter::sched {

const char* validate(const AdaptiveCapacityConfig& c) {
  if (c.min_limit == 0) return "adaptive_capacity.min must be > 0";
  if (c.max_limit < c.min_limit) return "adaptive_capacity.max must be >= min";
  if (c.interval.count() <= 0) return "adaptive_capacity.interval_ms must be > 0";
  if (c.itl_target.count() <= 0) return "adaptive_capacity.itl_target_ms must be > 0";
  if (!(c.itl_quantile > 0 && c.itl_quantile <= 1)) return "adaptive_capacity.itl_quantile must be in (0, 1]";
  if (!(c.kv_grow_below > 0 && c.kv_grow_below <= c.kv_shrink_above && c.kv_shrink_above <= 1))
    return "adaptive_capacity: need 0 < kv_grow_below <= kv_shrink_above <= 1";
  if (!(c.growth > 0 && c.growth <= 1)) return "adaptive_capacity.growth must be in (0, 1]";
  if (!(c.max_extra_share >= 0)) return "adaptive_capacity.max_extra_share must be >= 0";
  if (!(c.backoff > 0 && c.backoff < 1)) return "adaptive_capacity.backoff must be in (0, 1)";
  return nullptr;
}

std::chrono::duration<double> gap_target(const AdaptiveCapacityConfig& config,
                                         std::span<const std::chrono::duration<double>> bounds) {
  std::chrono::duration<double> target = std::chrono::duration<double>::max();
  for (const auto bound : bounds) {
    if (bound.count() > 0) target = std::min(target, bound);
  }
  return target == std::chrono::duration<double>::max() ? std::chrono::duration<double>(config.itl_target)
                                                         : target;
}

CapacityController::CapacityController(const AdaptiveCapacityConfig& config, uint32_t start,
                                       Clock::time_point now)
    : config_(config),
      start_(std::clamp(start, config.min_limit, config.max_limit)),
      ceiling_(static_cast<uint32_t>(
          std::min<double>(config.max_limit, std::floor(start_ * (1 + config.max_extra_share))))),
      limit_(start_),
      last_decision_(now) {}

void CapacityController::engine(double waiting, double kv_usage) {
  waiting_ = waiting;
  kv_ = kv_usage;
}

void CapacityController::gaps(uint64_t total, uint64_t within_target) {
  gaps_ += total;
  gaps_within_ += std::min(within_target, total);
}

void CapacityController::occupancy(const Occupancy& seen) {
  limited_ = limited_ || (seen.background_waiting && seen.in_flight >= limit_);
  in_use_ = in_use_ || seen.in_flight > static_cast<uint32_t>(std::floor(limit_ * config_.backoff));
  others_waiting_ = others_waiting_ || seen.others_waiting;
  others_active_ = others_active_ || seen.others_waiting || seen.others_running;
}

CapacityController::Verdict CapacityController::judge() const {
  const bool gap_evidence = gaps_ >= config_.min_gaps;
  const bool decode_fast =
      gap_evidence && static_cast<double>(gaps_within_) >= config_.itl_quantile * static_cast<double>(gaps_);
  if (kv_ > config_.kv_shrink_above) return Verdict::kShrink;
  // The limit held background work back and the engine shows room.
  const bool room = limited_ && waiting_ <= 0 && kv_ < config_.kv_grow_below;
  // The gap rule guards work that waits on its tokens. With no other work
  // running or waiting in the interval, the background work alone has no
  // per-token target: larger batches only raise its throughput, until the
  // engine's KV cache or its own queue says stop.
  if (!others_active_) return room ? Verdict::kGrow : Verdict::kHold;
  if (in_use_ && gap_evidence && !decode_fast && limit_ > start_) return Verdict::kHalveExtra;
  return room && !others_waiting_ && decode_fast ? Verdict::kGrow : Verdict::kHold;
}

bool CapacityController::update(Clock::time_point now) {
  if (now - last_decision_ < config_.interval) return false;
  last_decision_ = now;
  const uint32_t before = limit_;
  switch (judge()) {
    case Verdict::kShrink:  // the KV cache near full
      limit_ = std::max(config_.min_limit, static_cast<uint32_t>(std::floor(limit_ * config_.backoff)));
      break;
    case Verdict::kHalveExtra:
      // Whichever is smaller: half the slots above the start, or the backoff.
      limit_ = std::max(start_, std::min(start_ + extra() / 2,
                                         static_cast<uint32_t>(std::floor(limit_ * config_.backoff))));
      break;
    case Verdict::kGrow: {
      const auto step = std::max(1u, static_cast<uint32_t>(limit_ * config_.growth));
      limit_ = std::min(ceiling_, limit_ + step);
      break;
    }
    case Verdict::kHold: break;
  }
  gaps_ = 0;
  gaps_within_ = 0;
  limited_ = false;
  in_use_ = false;
  others_waiting_ = false;
  others_active_ = false;
  return limit_ != before;
}

}  // namespace arbiter::sched
