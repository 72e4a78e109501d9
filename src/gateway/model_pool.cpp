#include "gateway/model_pool.hpp"

namespace arbiter {

ModelPool::ModelPool(const ModelConfig& config, std::size_t io_threads)
    : config_(config), gaps_(std::make_unique<StreamGaps[]>(config.backends.size())) {
  for (const auto& b : config_.backends) {
    // Keep as many idle connections as the backend may have requests in
    // flight: a burst never has to reconnect.
    upstreams_.push_back(
        std::make_unique<UpstreamPool>(b.host, b.port, b.max_concurrency, io_threads,
                                       std::chrono::seconds(30), client_tls_for(b)));
  }
  also_runs_on(config_);
}

void ModelPool::also_runs_on(const ModelConfig& lender) {
  for (const auto& b : lender.backends) {
    continues_chat_ = continues_chat_ && (b.continue_final_message || b.type == BackendType::kSim);
    routes_by_prefix_ = routes_by_prefix_ || b.prefix_cache_tokens > 0;
  }
}

}  // namespace arbiter
