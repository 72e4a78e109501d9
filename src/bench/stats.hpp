// The arithmetic of the reports: exact percentiles, a log-bucketed histogram
// for per-token samples, Jain's fairness index.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace arbiter::bench {

// Percentiles reported everywhere; values in the unit of the samples.
struct Percentiles {
  uint64_t count = 0;  // samples; all percentiles are 0 when there are none
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0;
};

// Nearest rank: the smallest sample with at least p of the samples at or below it.
// Reorders `samples`. O(n).
double percentile(std::span<float> samples, double p);
Percentiles percentiles(std::vector<float>& samples);

// The middle value (the mean of the two middle ones for an even count); 0
// for none. Infinities sort last.
double median(std::vector<double> values);

// Jain's fairness index (sum x)^2 / (n * sum x^2), in [1/n, 1]; 1 for no or all-zero inputs.
double jain_index(std::span<const double> x);

// Positive seconds in buckets of ~0.8% relative width (the top 15 bits of
// the float: exponent and 7 mantissa bits), so adding a sample is a shift,
// no log(). Range 1 ns .. 10^6 s; values outside are clamped.
class LogHistogram {
 public:
  LogHistogram();
  void add(double seconds);
  void merge(const LogHistogram& other);
  uint64_t count() const { return count_; }
  // The bucket's midpoint value holding the nearest-rank percentile.
  double percentile(double p) const;
  Percentiles percentiles() const;

 private:
  static uint32_t bucket(double seconds);
  static double value(uint32_t bucket);
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
};

}  // namespace arbiter::bench
