#include "core/sched_rate.hpp"

#include <algorithm>
#include <cmath>

namespace arbiter::sched {

namespace {

double seconds(DecayingRate::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The shortest history the estimate divides by, so that the first completion
// after a quiet start does not read as a huge rate.
constexpr double kMinHistorySeconds = 1.0;

}  // namespace

void DecayingRate::add(Clock::time_point now, double amount) {
  if (!any_) {
    any_ = true;
    first_ = now;
    last_ = now;
  }
  // An event reported with an earlier time than the last one counts as of
  // the last one, so the estimate never runs backwards.
  now = std::max(now, last_);
  // A negative amount corrects an earlier estimate; the sum never goes below 0.
  const double decay = now == last_ ? 1.0 : std::exp(-seconds(now - last_) / tau_s_);
  sum_ = std::max(0.0, sum_ * decay + amount);
  last_ = now;
}

double DecayingRate::per_second(Clock::time_point now) const {
  if (!any_) return 0;
  const double decayed = sum_ * std::exp(-seconds(now - last_) / tau_s_);
  const double history = std::max(seconds(now - first_), kMinHistorySeconds);
  return decayed / (tau_s_ * (1 - std::exp(-history / tau_s_)));
}

}  // namespace arbiter::sched
