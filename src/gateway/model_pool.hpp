// The backends serving one model: their configs and upstream connection
// pools. Which backend a request runs on is the scheduler's decision
// (gateway/dispatch/dispatcher.hpp); this only holds the means to reach them.
#pragma once

#include <memory>
#include <vector>

#include "core/config.hpp"
#include "gateway/stream_gaps.hpp"
#include "http/upstream_pool.hpp"

namespace arbiter {

class ModelPool {
 public:
  // `io_threads`: I/O threads serving requests (upstream idle connections
  // are kept per thread).
  ModelPool(const ModelConfig& config, std::size_t io_threads);

  const BackendConfig& backend(std::size_t i) const { return config_.backends[i]; }
  UpstreamPool& upstream(std::size_t i) { return *upstreams_[i]; }
  // Backend i's stream gaps (adaptive capacity): the relays count into it.
  StreamGaps& gaps(std::size_t i) { return gaps_[i]; }
  std::size_t backend_count() const { return config_.backends.size(); }
  // Its requests may also run on `lender`'s backends (borrowing): the two
  // answers below then cover those backends too.
  void also_runs_on(const ModelConfig& lender);
  // Every backend its requests may run on can continue a partial assistant
  // message (vLLM's continue_final_message): a preempted chat request may
  // resume anywhere.
  bool continues_chat() const { return continues_chat_; }
  // Some such backend has a prefix cache size: requests need their prefix blocks.
  bool routes_by_prefix() const { return routes_by_prefix_; }

 private:
  const ModelConfig& config_;
  std::vector<std::unique_ptr<UpstreamPool>> upstreams_;  // per backend
  std::unique_ptr<StreamGaps[]> gaps_;                      // per backend
  bool continues_chat_ = true;     // see continues_chat()
  bool routes_by_prefix_ = false;  // see routes_by_prefix()
};

}  // namespace arbiter
