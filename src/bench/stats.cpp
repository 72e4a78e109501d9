#include "bench/stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace arbiter::bench {
namespace {

constexpr float kMin = 1e-9f;
constexpr float kMax = 1e6f;
const uint32_t kFirst = std::bit_cast<uint32_t>(kMin) >> 16;
const uint32_t kLast = std::bit_cast<uint32_t>(kMax) >> 16;

}  // namespace

double percentile(std::span<float> samples, double p) {
  if (samples.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(samples.size())));
  rank = std::clamp<std::size_t>(rank, 1, samples.size()) - 1;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(rank),
                   samples.end());
  return samples[rank];
}

Percentiles percentiles(std::vector<float>& samples) {
  Percentiles out{.count = samples.size()};
  out.p50 = percentile(samples, 0.5);
  out.p90 = percentile(samples, 0.9);
  out.p99 = percentile(samples, 0.99);
  out.p999 = percentile(samples, 0.999);
  return out;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double jain_index(std::span<const double> x) {
  double sum = 0, squares = 0;
  for (double v : x) {
    sum += v;
    squares += v * v;
  }
  if (squares == 0) return 1;
  return sum * sum / (static_cast<double>(x.size()) * squares);
}

LogHistogram::LogHistogram() : counts_(kLast - kFirst + 1, 0) {}

uint32_t LogHistogram::bucket(double seconds) {
  const float v = std::clamp(static_cast<float>(seconds), kMin, kMax);
  return (std::bit_cast<uint32_t>(v) >> 16) - kFirst;
}

double LogHistogram::value(uint32_t bucket) {
  return std::bit_cast<float>(((bucket + kFirst) << 16) | 0x8000u);
}

void LogHistogram::add(double seconds) {
  ++counts_[bucket(seconds)];
  ++count_;
}

void LogHistogram::merge(const LogHistogram& other) {
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
}

double LogHistogram::percentile(double p) const {
  if (count_ == 0) return 0;
  auto rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (uint32_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return value(i);
  }
  return value(static_cast<uint32_t>(counts_.size() - 1));
}

Percentiles LogHistogram::percentiles() const {
  return {.count = count_,
          .p50 = percentile(0.5),
          .p90 = percentile(0.9),
          .p99 = percentile(0.99),
          .p999 = percentile(0.999)};
}

}  // namespace arbiter::bench
