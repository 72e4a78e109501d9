#include "sim/sim_server.hpp"

#include "sim/sim_endpoint.hpp"

namespace arbiter::sim {

std::expected<std::unique_ptr<SimServer>, std::string> SimServer::create(net::io_context& ioc,
                                                                         SimOptions options, IoPool* workers) {
  if (std::string err = options_error(options); !err.empty()) return std::unexpected(std::move(err));
  return std::unique_ptr<SimServer>(new SimServer(ioc, std::move(options), workers));
}

SimServer::SimServer(net::io_context& ioc, SimOptions options, IoPool* workers)
    : ioc_(ioc), options_(std::move(options)), model_(served_model(options_)) {
  const engine::EngineConfig config = *resolve_engine_config(options_);
  for (unsigned i = 0; i < options_.engines; ++i) {
    endpoints_.push_back(std::make_unique<SimEndpoint>(ioc_, options_, config, i, workers));
  }
}

SimServer::~SimServer() = default;

std::expected<std::vector<std::uint16_t>, std::string> SimServer::start() {
  std::vector<std::uint16_t> ports;
  for (auto& e : endpoints_) {
    auto port = e->listen();
    if (!port) return std::unexpected(port.error());
    ports.push_back(*port);
  }
  for (auto& e : endpoints_) e->start();
  ports_ = std::move(ports);
  return ports_;
}

Faults SimServer::faults(std::size_t i) const { return endpoints_.at(i)->faults(); }

std::expected<void, std::string> SimServer::set_faults(std::size_t i, const Faults& faults) {
  return endpoints_.at(i)->set_faults(faults);
}

Task<void> SimServer::stop_engines() {
  if (engines_stopped_) co_return;
  engines_stopped_ = true;
  for (auto& e : endpoints_) co_await e->stop_engine();
}

// At the deadline the requests still waiting are ended, so that the drains'
// final cut finds only connections that are closing anyway.
Task<void> SimServer::cut_after(std::chrono::milliseconds deadline, std::shared_ptr<net::steady_timer> timer) {
  timer->expires_after(deadline);
  auto [ec] = co_await timer->async_wait(kAsTuple);
  if (!ec) co_await stop_engines();
}

Task<void> SimServer::stop(std::chrono::milliseconds deadline) {
  // On a strand of its own, so the completion handlers below never race.
  auto strand = net::make_strand(ioc_);
  co_await net::co_spawn(strand, stop_on_strand(deadline), net::use_awaitable);
}

Task<void> SimServer::stop_on_strand(std::chrono::milliseconds deadline) {
  const net::any_io_executor strand = co_await net::this_coro::executor;
  // Wakes this coroutine when `pending` (shared by the handlers) reaches zero.
  auto wakeup = std::make_shared<net::steady_timer>(strand, net::steady_timer::time_point::max());
  auto pending = std::make_shared<std::size_t>(endpoints_.size() + 1);
  const auto one_done = [wakeup, pending](std::exception_ptr) {
    if (--*pending == 0) wakeup->cancel();
  };
  auto cut_timer = std::make_shared<net::steady_timer>(strand);
  net::co_spawn(strand, cut_after(deadline, cut_timer), one_done);
  for (auto& e : endpoints_) {
    net::co_spawn(strand, e->drain(deadline), [one_done, cut_timer, pending](std::exception_ptr p) {
      one_done(p);
      if (*pending == 1) cut_timer->cancel();  // every listener drained: no cut needed
    });
  }
  if (endpoints_.empty()) cut_timer->cancel();
  while (*pending > 0) co_await wakeup->async_wait(kAsTuple);
  co_await stop_engines();
}

}  // namespace arbiter::sim
