// Recent completion rate (tokens per second) of one queue, used to turn a
// queue length into an expected drain time for Retry-After.
#pragma once

#include <chrono>

namespace arbiter::sched {

// An exponentially decaying sum: each completion adds its tokens, and the
// sum decays with time constant tau. O(1) time and 32 bytes per queue, where
// a sliding window of samples would cost memory per completion. For a steady
// rate r the sum tends to r * tau, so rate = sum / tau; right after the first
// completions the divisor is the part of tau that has elapsed (with a floor
// so one early completion does not look like an infinite rate).
class DecayingRate {
 public:
  using Clock = std::chrono::steady_clock;

  explicit DecayingRate(Clock::duration tau) : tau_s_(std::chrono::duration<double>(tau).count()) {}

  // Records `amount` tokens at `now` (an earlier `now` than the last counts
  // as the last); a negative amount corrects an earlier one.
  void add(Clock::time_point now, double amount);

  // Tokens per second at `now`; 0 when nothing has completed yet.
  double per_second(Clock::time_point now) const;

 private:
  double tau_s_;               // decay time constant, seconds
  double sum_ = 0;             // decayed token sum as of last_
  Clock::time_point first_{};  // first completion: start of the estimate
  Clock::time_point last_{};   // when sum_ was last brought up to date
  bool any_ = false;           // whether anything was recorded
};

}  // namespace arbiter::sched
