#include "app/embedded_sims.hpp"

#include <openssl/rand.h>

#include <array>

namespace arbiter {

namespace {

// A key only this process knows: the simulated engines listen on loopback
// ports any local user can reach, and their inference and /admin/faults
// would otherwise be open (fault injection turned gateway answers into 500s).
std::expected<std::string, std::string> random_key() {
  std::array<unsigned char, 24> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) return std::unexpected("no random bytes");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key;
  for (unsigned char b : bytes) {
    key += kHex[b >> 4];
    key += kHex[b & 15];
  }
  return key;
}

}  // namespace

std::expected<std::unique_ptr<EmbeddedSims>, std::string> EmbeddedSims::start(Config& config,
                                                                             net::io_context& ioc,
                                                                             IoPool& io) {
  auto sims = std::make_unique<EmbeddedSims>();
  const auto key = random_key();
  if (!key) return std::unexpected(key.error());
  for (auto& model : config.models) {
    for (std::size_t i = 0; i < model.backends.size(); ++i) {
      BackendConfig& b = model.backends[i];
      if (b.type != BackendType::kSim) continue;
      sim::SimOptions options;
      options.profile = b.sim_profile;
      options.model = model.name;  // the engine answers to the gateway's model name
      options.max_num_seqs = b.sim_max_num_seqs;
      options.lora_modules = b.adapters;
      options.max_loras = b.max_loras;
      options.seed = sims->servers_.size() + 1;
      if (b.priority_scheduling) options.policy = engine::SchedulingPolicy::kPriority;
      options.api_key = *key;
      auto server = sim::SimServer::create(ioc, options, &io);
      if (!server) return std::unexpected(b.name + ": " + server.error());
      auto ports = (*server)->start();
      if (!ports) return std::unexpected(b.name + ": " + ports.error());
      b.host = "127.0.0.1";
      b.port = ports->front();
      b.authorization = "Bearer " + *key;
      sims->addresses_[model.name + "/" + b.name] = b.port;
      sims->servers_.push_back(std::move(*server));
    }
  }
  sims->key_ = *key;
  return sims;
}

std::optional<std::string> EmbeddedSims::attach(Config& config) const {
  for (auto& model : config.models) {
    for (BackendConfig& b : model.backends) {
      if (b.type != BackendType::kSim) continue;
      const auto it = addresses_.find(model.name + "/" + b.name);
      if (it == addresses_.end()) {
        return "models." + model.name + ".backends." + b.name +
               ": a simulated engine starts only with the gateway; restart to add one";
      }
      b.host = "127.0.0.1";
      b.port = it->second;
      b.authorization = "Bearer " + key_;
    }
  }
  return std::nullopt;
}

Task<void> EmbeddedSims::stop(std::chrono::milliseconds deadline) {
  for (auto& s : servers_) co_await s->stop(deadline);
}

}  // namespace arbiter
