#include "app/embedded_sims.hpp"

namespace arbiter {

std::expected<std::unique_ptr<EmbeddedSims>, std::string> EmbeddedSims::start(Config& config,
                                                                             net::io_context& ioc,
                                                                             IoPool& io) {
  auto sims = std::make_unique<EmbeddedSims>();
  for (auto& model : config.models) {
    for (std::size_t i = 0; i < model.backends.size(); ++i) {
      BackendConfig& b = model.backends[i];
      if (b.type != BackendType::kSim) continue;
      sim::SimOptions options;
      options.profile = b.sim_profile;
      options.model = model.name;  // the engine answers to the gateway's model name
      options.max_num_seqs = b.sim_max_num_seqs;
      options.seed = sims->servers_.size() + 1;
      if (b.priority_scheduling) options.policy = engine::SchedulingPolicy::kPriority;
      auto server = sim::SimServer::create(ioc, options, &io);
      if (!server) return std::unexpected(b.name + ": " + server.error());
      auto ports = (*server)->start();
      if (!ports) return std::unexpected(b.name + ": " + ports.error());
      b.host = "127.0.0.1";
      b.port = ports->front();
      sims->servers_.push_back(std::move(*server));
    }
  }
  return sims;
}

Task<void> EmbeddedSims::stop(std::chrono::milliseconds deadline) {
  for (auto& s : servers_) co_await s->stop(deadline);
}

}  // namespace arbiter
