// Arrival times of one traffic source: a rate curve over time (steps,
// bursts, a compressed day) and a Poisson or gamma process run on it by
// time rescaling: unit-mean gaps in "operational time", mapped back through
// the integral of the rate. So bursts and the day curve change the rate
// without changing the process's burstiness.
#pragma once

#include <random>
#include <vector>

#include "bench/scenario.hpp"

namespace arbiter::bench {

// The rate of a RateSpec as piecewise-constant segments up to `horizon_s`
// (the day curve in quarter-hour pieces); constant after it.
class RateCurve {
 public:
  RateCurve(const RateSpec& spec, double horizon_s);

  double rate_at(double t) const;
  // The time t' >= t with integral of the rate over [t, t'] == work; infinity
  // when the rate stays 0. Amortised O(1) when called with increasing t.
  double advance(double t, double work);

 private:
  struct Segment {
    double start;  // seconds
    double rate;   // per second from start to the next segment's start
  };
  std::vector<Segment> segments_;  // sorted by start, first at 0
  std::size_t cursor_ = 0;         // segment of the last advance()
};

// Factor of the day curve at time t: night + (peak - night) * office-day shape.
double day_factor(const DayCurve& day, double t);

// Event times of one source, increasing, from 0.
class ArrivalProcess {
 public:
  ArrivalProcess(const TrafficSpec& traffic, double horizon_s, uint64_t seed);
  double next();  // the next event time; infinity when the rate is 0 from here on

 private:
  RateCurve curve_;
  bool gamma_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> exponential_{1.0};
  std::gamma_distribution<double> gamma_dist_;
  double now_ = 0;
};

}  // namespace arbiter::bench
