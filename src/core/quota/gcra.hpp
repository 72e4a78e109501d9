// One rate limit as a GCRA bucket (the generic cell rate algorithm, as in
// ATM policing and redis-cell): `limit` units per `period`, the whole limit
// usable at once. The state is one time point, the theoretical arrival time
// (TAT): the bucket is full at or after it, and each unit taken pushes it
// one emission interval (period / limit) later. Pure: the caller passes the
// time, so tests drive it with a fake clock.
#pragma once

#include <chrono>

namespace arbiter::quota {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;

class Gcra {
 public:
  Gcra(double limit, Duration period);

  double limit() const { return limit_; }
  Duration period() const { return period_; }

  // Units that could be taken at `now` (0..limit).
  double remaining(TimePoint now) const;
  // How long until `n` units could be taken; zero when they can now,
  // Duration::max() when `n` is over the limit (never).
  Duration wait_for(TimePoint now, double n) const;
  // Takes `n` units whether or not they fit: reconciling a request that
  // used more than it reserved puts the bucket in debt, and later takes
  // wait for it.
  void take(TimePoint now, double n);
  // Returns `n` units taken earlier (a reservation not used). The level
  // never rises above the limit: a bucket already full stays full.
  void give_back(double n);
  // Until the bucket is full again (the x-ratelimit-reset-* headers).
  Duration until_full(TimePoint now) const;
  // A new limit (a dynamic quota recomputed); what is used so far stays used.
  void set_limit(TimePoint now, double limit);

 private:
  double limit_;
  Duration period_;
  double interval_ns_;  // emission interval: period / limit
  TimePoint tat_{};     // full at or after this
};

}  // namespace arbiter::quota
