// The backends serving one model: their in-flight accounting (behind one
// mutex) and their upstream connection pools. A Lease is the RAII permit for
// one request on one backend: its slot is returned exactly once, whatever
// path the request takes (success, error, client gone, exception).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/backend_load.hpp"
#include "core/config.hpp"
#include "gateway/gateway_metrics.hpp"
#include "http/upstream_pool.hpp"

namespace arbiter {

class ModelPool {
 public:
  // `io_threads`: I/O threads serving requests (upstream idle connections
  // are kept per thread).
  ModelPool(const ModelConfig& config, GatewayMetrics& metrics, std::size_t io_threads);

  class Lease {
   public:
    Lease(ModelPool* pool, std::size_t backend) : pool_(pool), backend_(backend) {}
    Lease(Lease&& o) noexcept : pool_(std::exchange(o.pool_, nullptr)), backend_(o.backend_) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (pool_) pool_->release(backend_);
    }
    std::size_t backend() const { return backend_; }

   private:
    ModelPool* pool_;
    std::size_t backend_;
  };

  // A slot on the least loaded backend, or nullopt when all are full.
  std::optional<Lease> acquire();

  const ModelConfig& config() const { return config_; }
  const BackendConfig& backend(std::size_t i) const { return config_.backends[i]; }
  UpstreamPool& upstream(std::size_t i) { return *upstreams_[i]; }
  unsigned in_flight() const;

 private:
  void release(std::size_t backend);

  const ModelConfig& config_;
  mutable std::mutex mu_;
  BackendLoad load_;                                   // guarded by mu_
  std::vector<std::unique_ptr<UpstreamPool>> upstreams_;
  std::vector<metrics::Gauge*> in_flight_gauges_;      // per backend
};

}  // namespace arbiter
