#include "core/quota/dynamic_quota.hpp"

#include <algorithm>
#include <cmath>

namespace arbiter::quota {

double burst_factor(std::span<const double> hourly_usage) {
  if (hourly_usage.empty()) return 1;
  const double n = static_cast<double>(hourly_usage.size());
  double sum = 0;
  for (const double u : hourly_usage) sum += u;
  const double mean = sum / n;
  if (mean <= 0) return 1;
  double squares = 0;
  for (const double u : hourly_usage) squares += (u - mean) * (u - mean);
  const double std_dev = std::sqrt(squares / n);
  return 1 + std::min(0.5 * std_dev / mean, 0.3);
}

double dynamic_quota(const DynamicQuotaInputs& in) {
  return in.members * in.per_member * in.complexity * burst_factor(in.hourly_usage);
}

}  // namespace arbiter::quota
