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
  if (c.budget_patience == 0) return "adaptive_capacity.budget_patience must be >= 1";
  if (!(c.ttft_headroom > 0 && c.ttft_headroom <= 1)) return "adaptive_capacity.ttft_headroom must be in (0, 1]";
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
      budget_(start_),
      part_(start_),
      limit_(start_),
      last_decision_(now) {}

void CapacityController::engine(double waiting, double kv_usage, double running) {
  waiting_ = std::max(0.0, waiting);
  kv_ = kv_usage;
  running_ = std::max(0.0, running);
}

void CapacityController::gaps(const GapCounts& seen) {
  gaps_.total += seen.total;
  gaps_.within += std::min(seen.within, seen.total);
  gaps_.seconds += seen.seconds;
  gaps_.within_seconds += std::min(seen.within_seconds, seen.seconds);
  gaps_.firsts += seen.firsts;
  gaps_.firsts_slow += std::min(seen.firsts_slow, seen.firsts);
  gaps_.abandoned += seen.abandoned;
}

void CapacityController::occupancy(const Occupancy& seen) {
  in_flight_ = seen.in_flight;
  limited_ = limited_ || (seen.background_waiting && seen.in_flight >= limit_);
  // Other work waits and most of the part is other work's.
  const bool part_full = seen.others_waiting && seen.in_flight >= part_ &&
                         seen.others_in_flight >= std::floor(part_ * config_.backoff);
  part_limited_ = part_limited_ || part_full;
  budget_limited_ = budget_limited_ || (part_full && load() >= budget_);
  in_use_ = in_use_ || seen.in_flight > static_cast<uint32_t>(std::floor(limit_ * config_.backoff)) ||
            load() > std::floor(budget_ * config_.backoff);
  others_waiting_ = others_waiting_ || seen.others_waiting;
  others_active_ = others_active_ || seen.others_waiting || seen.others_running;
}

CapacityController::Verdict CapacityController::judge() const {
  const bool gap_evidence = gaps_.total >= config_.min_gaps;
  const bool decode_fast =
      gap_evidence && static_cast<double>(gaps_.within) >= config_.itl_quantile * static_cast<double>(gaps_.total);
  // For every class the time counts, not the steps: an engine whose time
  // goes to prefill chunks (slow steps, few by count) has nothing to spare
  // for more sequences, however many of its steps are fast decode-only ones.
  const bool time_fast = decode_fast && gaps_.within_seconds >= config_.itl_quantile * gaps_.seconds;
  if (kv_ > config_.kv_shrink_above) return Verdict::kShrink;
  if (waiting_ > 0) return Verdict::kSettle;  // the engine is past what it runs: never grow
  const bool room = kv_ < config_.kv_grow_below;
  // The gap rule guards work that waits on its tokens. With no other work
  // running or waiting in the interval, the background work alone has no
  // per-token target: larger batches only raise its throughput, until the
  // engine's KV cache or its own queue says stop.
  if (!others_active_) return limited_ && room ? Verdict::kGrowExtra : Verdict::kHold;
  // First tokens past their headroom, or clients leaving what runs: the
  // engine is too slow for the requests it has, whatever the gaps say.
  const bool late = gaps_.firsts_slow > 0 || gaps_.abandoned > 0;
  const bool slow = (gap_evidence && !decode_fast) || late;
  if (in_use_ && slow && std::max(limit_, budget_) > start_) return Verdict::kHalve;
  if (!room || !decode_fast) return Verdict::kHold;
  if (budget_limited_) return time_fast && !late ? Verdict::kGrowBudget : Verdict::kHold;
  return limited_ && !others_waiting_ ? Verdict::kGrowExtra : Verdict::kHold;
}

uint32_t CapacityController::halved(uint32_t x) const {
  if (x <= start_) return x;
  return std::max(start_, std::min(start_ + (x - start_) / 2, static_cast<uint32_t>(std::floor(x * config_.backoff))));
}

uint32_t CapacityController::extra_ceiling() const {
  return static_cast<uint32_t>(
      std::min<double>(config_.max_limit, std::floor(part_ * (1 + config_.max_extra_share))));
}

void CapacityController::share() {
  const double load = this->load();
  // Alone: the engine holds no more than this gateway sent it, within the
  // slack a scrape's lag behind the gateway's own count leaves (live, a
  // single gateway's backend otherwise looked shared now and then, and gave
  // its background work's extra slots away).
  const bool alone = load - in_flight_ <= std::max(4.0, load / 8);
  if (alone) {
    part_ = budget_;
  } else if (load > budget_) {
    // Its share of the budget, and at least a backoff step: the same factor
    // for every replica is what lets the additive steps even the parts out.
    const auto proportional = static_cast<uint32_t>(std::floor(in_flight_ * static_cast<double>(budget_) / load));
    const auto backed_off = static_cast<uint32_t>(std::floor(part_ * config_.backoff));
    part_ = std::max(config_.min_limit, std::min({part_, proportional, backed_off}));
  } else if (part_limited_) {
    // A small step: every replica with demand takes one at once.
    part_ += std::max(1u, static_cast<uint32_t>(budget_ * config_.growth / 4));
  }
  part_ = std::clamp(part_, std::min(config_.min_limit, budget_), budget_);
  limit_ = std::clamp(limit_, part_, std::max(part_, extra_ceiling()));
}

bool CapacityController::update(Clock::time_point now) {
  if (now - last_decision_ < config_.interval) return false;
  last_decision_ = now;
  const uint32_t before = limit_;
  const uint32_t part_before = part_;
  const auto grown = [&](uint32_t x) {
    return std::min(config_.max_limit, x + std::max(1u, static_cast<uint32_t>(x * config_.growth)));
  };
  Verdict verdict = judge();
  budget_streak_ = verdict == Verdict::kGrowBudget ? budget_streak_ + 1 : 0;
  // Back up to the start needs no patience: that many the operator configured.
  if (verdict == Verdict::kGrowBudget && budget_ >= start_ && budget_streak_ < config_.budget_patience) {
    verdict = Verdict::kHold;
  }
  switch (verdict) {
    case Verdict::kShrink: {  // the KV cache near full: the extra slots go first
      const auto shrunk = [&](uint32_t x) {
        return std::max(config_.min_limit, static_cast<uint32_t>(std::floor(x * config_.backoff)));
      };
      if (limit_ == part_) budget_ = shrunk(budget_);
      limit_ = shrunk(limit_);
      break;
    }
    case Verdict::kSettle: {
      // The budget toward what the engine runs, at most a backoff step, never
      // below the start; the part follows it (share()). Background work's
      // extra slots hold, as before: an engine also queues for a step's token
      // budget, and they are given back to slow gaps and a full KV cache.
      const auto runs = static_cast<uint32_t>(std::floor(running_));
      if (budget_ > start_ && budget_ > runs) {
        budget_ = std::max({start_, runs, static_cast<uint32_t>(std::floor(budget_ * config_.backoff))});
      }
      break;
    }
    case Verdict::kHalve:
      budget_ = halved(budget_);
      limit_ = halved(limit_);
      break;
    case Verdict::kGrowBudget:
      budget_ = grown(budget_);
      break;
    case Verdict::kGrowExtra:
      // Below the start (after a full KV cache) the slots are every class's,
      // as configured: the budget comes back first.
      if (budget_ < start_) {
        budget_ = std::min(start_, grown(budget_));
      } else {
        limit_ = std::max(limit_, std::min(extra_ceiling(), grown(limit_)));
      }
      break;
    case Verdict::kHold: break;
  }
  share();
  // While the engine queues requests itself nothing grows, the part by
  // other gateways leaving included: the next scrape says whether they did.
  if (waiting_ > 0) {
    part_ = std::min(part_, part_before);
    limit_ = std::max(part_, std::min(limit_, before));
  }
  gaps_ = {};
  limited_ = false;
  budget_limited_ = false;
  part_limited_ = false;
  in_use_ = false;
  others_waiting_ = false;
  others_active_ = false;
  return limit_ != before || part_ != part_before;
}

}  // namespace arbiter::sched
