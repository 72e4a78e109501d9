// In-flight bookkeeping for the backends of one model pool and the "least
// in-flight" pick. Not thread-safe: the gateway keeps one per model behind a
// mutex (the scheduler issue replaces the pick with queued late binding).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace arbiter {

class BackendLoad {
 public:
  explicit BackendLoad(std::vector<unsigned> max_concurrency);

  // Reserves a slot on the backend with the fewest in-flight requests
  // relative to its limit; nullopt when every backend is full. Ties rotate so
  // equal backends share the load.
  std::optional<std::size_t> acquire_least_loaded();
  void release(std::size_t backend);

  unsigned in_flight(std::size_t backend) const { return in_flight_[backend]; }
  unsigned total_in_flight() const;
  std::size_t size() const { return limit_.size(); }

 private:
  std::vector<unsigned> limit_;      // max_concurrency per backend
  std::vector<unsigned> in_flight_;  // reserved slots per backend
  std::size_t next_start_ = 0;       // rotating tie-break
};

}  // namespace arbiter
