#include "core/backend_load.hpp"

#include <cassert>
#include <cstdint>
#include <numeric>

namespace arbiter {

BackendLoad::BackendLoad(std::vector<unsigned> max_concurrency)
    : limit_(std::move(max_concurrency)), in_flight_(limit_.size(), 0) {}

std::optional<std::size_t> BackendLoad::acquire_least_loaded() {
  const std::size_t n = limit_.size();
  std::optional<std::size_t> best;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_start_ + k) % n;
    if (in_flight_[i] >= limit_[i]) continue;
    // Compare in_flight/limit without division: a/b < c/d <=> a*d < c*b.
    if (!best || static_cast<uint64_t>(in_flight_[i]) * limit_[*best] <
                     static_cast<uint64_t>(in_flight_[*best]) * limit_[i]) {
      best = i;
    }
  }
  if (best) {
    ++in_flight_[*best];
    next_start_ = (*best + 1) % n;
  }
  return best;
}

void BackendLoad::release(std::size_t backend) {
  assert(in_flight_[backend] > 0 && "release without acquire");
  --in_flight_[backend];
}

unsigned BackendLoad::total_in_flight() const {
  return std::accumulate(in_flight_.begin(), in_flight_.end(), 0u);
}

}  // namespace arbiter
