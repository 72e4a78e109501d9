// The workload of a scenario as one time-ordered stream of RequestSpecs,
// generated lazily (memory holds only requests already decided but not yet
// due, e.g. the later turns of open chat sessions). Deterministic per seed;
// each class draws from its own random stream, so adding a class does not
// change the others' traffic.
#pragma once

#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <vector>

#include "bench/arrivals.hpp"
#include "bench/request_spec.hpp"
#include "bench/scenario.hpp"

namespace arbiter::bench {

// One draw from a length distribution, at least `floor`.
uint32_t draw_length(const LengthDist& dist, std::mt19937_64& rng, uint32_t floor = 1);

class Workload {
 public:
  Workload(const Scenario& scenario, uint64_t seed);
  ~Workload();
  Workload(Workload&&) noexcept;

  // The next request by arrival time (ties: generation order); nullopt at the
  // end (duration or max_requests reached).
  std::optional<RequestSpec> next();
  uint64_t generated() const { return next_id_; }

  class Source;  // one class's traffic (workload.cpp)

 private:
  struct Pending {
    RequestSpec spec;
    uint64_t seq;  // generation order, for deterministic ties
    bool operator>(const Pending& o) const {
      return spec.arrival != o.spec.arrival ? spec.arrival > o.spec.arrival : seq > o.seq;
    }
  };
  using PendingQueue = std::priority_queue<Pending, std::vector<Pending>, std::greater<>>;

  const Scenario* scenario_;
  std::vector<double> adapter_cdf_;  // cumulative popularity of the LoRA adapters (Scenario::lora)
  std::vector<std::unique_ptr<Source>> sources_;
  PendingQueue pending_;
  uint64_t next_seq_ = 0;
  uint64_t next_id_ = 0;
};

}  // namespace arbiter::bench
