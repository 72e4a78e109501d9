#include "core/quota/gcra.hpp"

#include <algorithm>
#include <cmath>

namespace arbiter::quota {

namespace {

Duration nanos(double ns) { return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::nano>(ns)); }

}  // namespace

Gcra::Gcra(double limit, Duration period)
    : limit_(limit), period_(period), interval_ns_(std::chrono::duration<double, std::nano>(period).count() / limit) {}

double Gcra::remaining(TimePoint now) const {
  const double used = std::chrono::duration<double, std::nano>(std::max(tat_, now) - now).count() / interval_ns_;
  return std::clamp(limit_ - used, 0.0, limit_);
}

Duration Gcra::wait_for(TimePoint now, double n) const {
  if (n > limit_) return Duration::max();
  // Allowed at t when max(tat, t) + n * interval - t <= period.
  const TimePoint allowed = tat_ + nanos(n * interval_ns_) - period_;
  return allowed > now ? allowed - now : Duration::zero();
}

void Gcra::take(TimePoint now, double n) { tat_ = std::max(tat_, now) + nanos(n * interval_ns_); }

void Gcra::give_back(double n) { tat_ -= nanos(n * interval_ns_); }

Duration Gcra::until_full(TimePoint now) const { return tat_ > now ? tat_ - now : Duration::zero(); }

void Gcra::set_limit(TimePoint now, double limit) {
  const double used = std::chrono::duration<double, std::nano>(std::max(tat_, now) - now).count() / interval_ns_;
  limit_ = limit;
  interval_ns_ = std::chrono::duration<double, std::nano>(period_).count() / limit;
  tat_ = now + nanos(used * interval_ns_);
}

}  // namespace arbiter::quota
