// Backends of `type: sim`: simulated vLLM engines (src/sim) started inside
// the gateway process, each on its own loopback port, so the request path is
// exactly the one real engines get (HTTP, SSE, aborts on disconnect).
#pragma once

#include <chrono>
#include <expected>
#include <memory>
#include <optional>
#include <unordered_map>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "http/io_pool.hpp"
#include "sim/sim_server.hpp"

namespace arbiter {

class EmbeddedSims {
 public:
  // Starts one engine per sim backend in `config` and points the backend at
  // it (host 127.0.0.1, its port), with a random API key that the backend's
  // `authorization` carries.
  static std::expected<std::unique_ptr<EmbeddedSims>, std::string> start(Config& config,
                                                                         net::io_context& ioc,
                                                                         IoPool& io);
  // A reloaded config's sim backends pointed at the engines started for
  // the same model and backend name; why not when one has none (nullopt: done).
  std::optional<std::string> attach(Config& config) const;
  // Lets requests in progress finish for up to `deadline`, then stops.
  Task<void> stop(std::chrono::milliseconds deadline);
  std::size_t size() const { return servers_.size(); }

 private:
  std::vector<std::unique_ptr<sim::SimServer>> servers_;
  std::unordered_map<std::string, uint16_t> addresses_;  // "model/backend" -> its engine's port
  std::string key_;  // the engines' API key
};

}  // namespace arbiter
