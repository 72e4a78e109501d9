#include "gateway/model_pool.hpp"

namespace arbiter {

namespace {
std::vector<unsigned> limits_of(const ModelConfig& config) {
  std::vector<unsigned> out;
  for (const auto& b : config.backends) out.push_back(b.max_concurrency);
  return out;
}
}  // namespace

ModelPool::ModelPool(const ModelConfig& config, GatewayMetrics& metrics, std::size_t io_threads)
    : config_(config), load_(limits_of(config)) {
  for (const auto& b : config_.backends) {
    // Keep as many idle connections as the backend may have requests in
    // flight: a burst never has to reconnect.
    upstreams_.push_back(
        std::make_unique<UpstreamPool>(b.host, b.port, b.max_concurrency, io_threads));
    in_flight_gauges_.push_back(&metrics.backend_in_flight.with({config_.name, b.name}));
  }
}

std::optional<ModelPool::Lease> ModelPool::acquire() {
  std::optional<std::size_t> picked;
  {
    std::lock_guard lock(mu_);
    picked = load_.acquire_least_loaded();
  }
  if (!picked) return std::nullopt;
  in_flight_gauges_[*picked]->add(1);
  return Lease(this, *picked);
}

void ModelPool::release(std::size_t backend) {
  {
    std::lock_guard lock(mu_);
    load_.release(backend);
  }
  in_flight_gauges_[backend]->sub(1);
}

unsigned ModelPool::in_flight() const {
  std::lock_guard lock(mu_);
  return load_.total_in_flight();
}

}  // namespace arbiter
