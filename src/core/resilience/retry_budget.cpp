#include "core/resilience/retry_budget.hpp"

#include <algorithm>

namespace arbiter::resilience {

std::optional<std::string> validate(const RetryConfig& c) {
  if (!(c.budget >= 0 && c.budget <= 1)) return "retries: budget must be within [0, 1]";
  if (c.window < std::chrono::milliseconds(1)) return "retries: window must be at least 1 ms";
  if (c.backoff_base < Duration::zero()) return "retries: backoff_base must be >= 0";
  if (c.backoff_max < c.backoff_base) return "retries: backoff_max must be >= backoff_base";
  return std::nullopt;
}

RetryBudget::RetryBudget(RetryConfig config)
    : config_(config), requests_(config.window), retries_(config.window) {}

void RetryBudget::on_request(TimePoint now) {
  last_ = std::max(last_, now);
  requests_.add(last_);
}

bool RetryBudget::try_retry(TimePoint now) {
  last_ = std::max(last_, now);
  if (!within(retries_.count(last_), requests_.count(last_))) {
    ++refused_total_;
    return false;
  }
  retries_.add(last_);
  ++retries_total_;
  return true;
}

Duration RetryBudget::backoff(uint32_t attempt, uint64_t random) const {
  Duration cap = config_.backoff_base;
  for (uint32_t i = 1; i < attempt && cap > Duration::zero() && cap < config_.backoff_max; ++i)
    cap *= 2;
  cap = std::min(cap, config_.backoff_max);
  return Duration(static_cast<Duration::rep>(random % (static_cast<uint64_t>(cap.count()) + 1)));
}

bool RetryBudget::within(uint64_t retries, uint64_t requests) const {
  if (retries + 1 <= config_.min_retries) return true;
  // A quotient, not budget x requests: 57 / 100 is the double 0.57 is,
  // where 0.57 * 100 is a hair under 57.
  return requests > 0 &&
         static_cast<double>(retries + 1) / static_cast<double>(requests) <= config_.budget;
}

}  // namespace arbiter::resilience
