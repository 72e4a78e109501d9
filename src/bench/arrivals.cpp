#include "bench/arrivals.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace arbiter::bench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Load through an office day, per hour from midnight: 0 at night, peaks at
// 9-10 and 15 (code review hours), a lunch dip, a tail into the evening.
constexpr std::array<double, 24> kDayShape = {0,   0,   0,   0,   0,   0.05, 0.2,  0.5,
                                              0.9, 1,   1,   0.9, 0.6, 0.7,  0.9,  1,
                                              0.9, 0.6, 0.4, 0.3, 0.2, 0.1,  0.05, 0};

}  // namespace

double day_factor(const DayCurve& day, double t) {
  double hour = std::fmod(day.start_hour + 24 * t / day.period_s, 24.0);
  const auto h = static_cast<std::size_t>(hour);
  const double frac = hour - static_cast<double>(h);
  const double shape = kDayShape[h] + (kDayShape[(h + 1) % 24] - kDayShape[h]) * frac;
  return day.night + (day.peak - day.night) * shape;
}

RateCurve::RateCurve(const RateSpec& spec, double horizon_s) {
  std::vector<double> starts = {0};
  for (const RateChange& c : spec.changes) {
    starts.push_back(c.at_s);
    if (c.for_s) starts.push_back(c.at_s + *c.for_s);
  }
  if (spec.day) {
    const double quarter = spec.day->period_s / 96;
    for (double t = quarter; t < horizon_s; t += quarter) starts.push_back(t);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const double start = starts[i];
    // Constant over the segment: take the factor at its midpoint.
    const double end = i + 1 < starts.size() ? starts[i + 1] : start + 1;
    const double mid = (start + end) / 2;
    double rate = spec.base;
    for (const RateChange& c : spec.changes) {
      if (mid >= c.at_s && (!c.for_s || mid < c.at_s + *c.for_s)) rate *= c.factor;
    }
    if (spec.day) rate *= day_factor(*spec.day, mid);
    segments_.push_back({start, std::max(rate, 0.0)});
  }
}

double RateCurve::rate_at(double t) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), t,
                             [](double v, const Segment& s) { return v < s.start; });
  return std::prev(it)->rate;
}

double RateCurve::advance(double t, double work) {
  if (cursor_ >= segments_.size() || segments_[cursor_].start > t) cursor_ = 0;
  while (cursor_ + 1 < segments_.size() && segments_[cursor_ + 1].start <= t) ++cursor_;
  for (;;) {
    const Segment& s = segments_[cursor_];
    const bool last = cursor_ + 1 == segments_.size();
    const double end = last ? kInf : segments_[cursor_ + 1].start;
    if (s.rate > 0) {
      const double reach = t + work / s.rate;
      if (reach <= end) return reach;
      work -= (end - t) * s.rate;
    }
    if (last) return kInf;
    t = end;
    ++cursor_;
  }
}

ArrivalProcess::ArrivalProcess(const TrafficSpec& traffic, double horizon_s, uint64_t seed)
    : curve_(traffic.rate, horizon_s),
      gamma_(traffic.arrival.gamma),
      rng_(seed),
      // Shape b, scale 1/b: mean 1, coefficient of variation 1/sqrt(b).
      gamma_dist_(traffic.arrival.burstiness, 1.0 / traffic.arrival.burstiness) {}

double ArrivalProcess::next() {
  if (std::isinf(now_)) return now_;
  const double work = gamma_ ? gamma_dist_(rng_) : exponential_(rng_);
  now_ = curve_.advance(now_, work);
  return now_;
}

}  // namespace arbiter::bench
