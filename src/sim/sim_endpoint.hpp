// One simulated vLLM server: an engine (EngineDriver) and the HTTP listener
// in front of it. Serves the OpenAI routes, /v1/models, /health, /metrics
// and the fault admin API, and applies the faults.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <mutex>
#include <string>

#include "http/server.hpp"
#include "sim/engine_driver.hpp"
#include "sim/faults.hpp"
#include "sim/sim_metrics.hpp"
#include "sim/sim_options.hpp"
#include "sim/sim_request.hpp"

namespace arbiter::sim {

class SimEndpoint {
 public:
  // `config` is resolve_engine_config(options); `index` the engine's number
  // (its port is options.port + index unless that is 0); `workers`, when
  // given, runs the connections (see HttpServer).
  SimEndpoint(net::io_context& ioc, const SimOptions& options, const engine::EngineConfig& config,
              unsigned index, IoPool* workers);

  std::expected<std::uint16_t, std::string> listen();
  // Starts the engine loop and the accept loop; the slow-start window opens now.
  void start();
  // Stops taking requests and waits for those in progress (see HttpServer::drain).
  Task<void> drain(std::chrono::milliseconds deadline) { return server_.drain(deadline); }
  // Wakes every request still waiting (they end unanswered) and stops the engine loop.
  Task<void> stop_engine() { return driver_.stop(); }

  Faults faults() const;
  // Replaces the faults; the slow-start window restarts when slow_start_s > 0.
  std::expected<void, std::string> set_faults(const Faults& faults);

 private:
  using Clock = std::chrono::steady_clock;

  Task<void> handle(HttpRequest& req, ClientConnection& conn);
  Task<void> handle_admin(HttpRequest& req, ClientConnection& conn);
  Task<void> inference(Route route, HttpRequest& req, ClientConnection& conn);
  // /v1/embeddings: answered at once (sim_embeddings.cpp).
  Task<void> embeddings(HttpRequest& req, ClientConnection& conn);
  // Both: true when the whole answer went out (the request is over in the engine).
  Task<bool> stream_answer(ClientConnection& conn, const SimRequest& request, Delivery& delivery,
                           std::uint32_t crash_after, std::uint64_t response_n);
  Task<bool> whole_answer(ClientConnection& conn, const SimRequest& request, Delivery& delivery,
                          std::uint32_t crash_after, std::uint64_t response_n);
  Task<void> send_body(ClientConnection& conn, http::status status, std::string body,
                       std::string_view content_type);
  Task<void> send_error(ClientConnection& conn, const SimError& error);
  void apply_faults(const Faults& faults, bool restart_slow_start);
  bool starting() const;  // inside the slow-start window
  std::string models_body() const;
  // vLLM's vllm:lora_requests_info line (its value the time of the scrape).
  std::string lora_info(const std::vector<std::uint32_t>& running, const std::vector<std::uint32_t>& waiting) const;

  const unsigned index_;               // engine number within the SimServer
  const std::string model_;            // served model name
  const std::string api_key_;          // empty: inference and /admin/* are open
  const std::uint64_t seed_;           // fault draws and text
  const std::uint16_t wanted_port_;    // 0: ephemeral
  const std::vector<std::string> adapters_;  // LoRA adapters served (SimOptions::lora_modules)
  SimMetrics metrics_;                 // this engine's /metrics
  EngineDriver driver_;                // the engine itself
  RequestLimits limits_;               // points into model_ and driver_.config()
  mutable std::mutex faults_mu_;
  Faults faults_;                      // guarded by faults_mu_
  std::atomic<Clock::rep> unhealthy_until_{0};  // slow start: 503 until this steady-clock tick
  std::atomic<std::uint64_t> requests_{0};      // inference requests seen: the n of fault draws
  HttpServer server_;                  // last: its connections use everything above
};

}  // namespace arbiter::sim
