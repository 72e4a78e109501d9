// arbiter::sim::SimServer: N independent simulated vLLM engines in one
// process, each with its own HTTP listener on 127.0.0.1, all on the caller's
// io_context (any number of threads: each engine lives behind a strand).
//
//   auto sim = SimServer::create(ioc, options);      // validates the options
//   auto ports = (*sim)->start();                    // binds, starts serving
//   ... http://127.0.0.1:<ports[i]>/v1/chat/completions ...
//   co_await (*sim)->stop(std::chrono::seconds(5));  // drain, then cut
//
// stop() must complete (or the io_context must have stopped running) before
// the SimServer is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "http/asio.hpp"
#include "http/io_pool.hpp"
#include "sim/faults.hpp"
#include "sim/sim_options.hpp"

namespace arbiter::sim {

class SimEndpoint;

class SimServer {
 public:
  // An error message when the options are invalid. The engines run on
  // strands of `ioc`; connections too, or on `workers` when given (the
  // gateway's one-context-per-thread pool).
  static std::expected<std::unique_ptr<SimServer>, std::string> create(net::io_context& ioc,
                                                                       SimOptions options,
                                                                       IoPool* workers = nullptr);
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  // Binds every engine's listener and starts the engines; the bound ports,
  // engine i at index i. Call once.
  std::expected<std::vector<std::uint16_t>, std::string> start();
  const std::vector<std::uint16_t>& ports() const { return ports_; }

  // Stops accepting, lets requests in progress finish for up to `deadline`,
  // then ends the rest unanswered (hung requests included) and stops the
  // engines. Completes when all of that is done.
  Task<void> stop(std::chrono::milliseconds deadline);

  const SimOptions& options() const { return options_; }
  const std::string& model() const { return model_; }
  std::size_t engines() const { return endpoints_.size(); }

  // Faults of engine `i` at run time (what POST /admin/faults on its port does).
  Faults faults(std::size_t i) const;
  std::expected<void, std::string> set_faults(std::size_t i, const Faults& faults);

 private:
  SimServer(net::io_context& ioc, SimOptions options, IoPool* workers);
  Task<void> cut_after(std::chrono::milliseconds deadline, std::shared_ptr<net::steady_timer> timer);
  Task<void> stop_on_strand(std::chrono::milliseconds deadline);
  Task<void> stop_engines();

  net::io_context& ioc_;                                 // runs every engine and connection
  const SimOptions options_;                             // as given to create()
  const std::string model_;                              // served model name
  std::vector<std::unique_ptr<SimEndpoint>> endpoints_;  // one per engine
  std::vector<std::uint16_t> ports_;                     // bound, by engine
  bool engines_stopped_ = false;                         // stop_engines() ran
};

}  // namespace arbiter::sim
