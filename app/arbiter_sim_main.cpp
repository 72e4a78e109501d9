// arbiter-sim: N simulated vLLM engines on ports P..P+N-1 (docs/simulator.md,
// "Server"). Exits 2 on bad flags; drains and exits 0 on SIGTERM/SIGINT.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/profile.hpp"
#include "observability/event_log.hpp"
#include "sim/sim_flags.hpp"
#include "sim/sim_server.hpp"

namespace {

// Written via a temporary file and rename, so a reader never sees it half written.
bool write_port_file(const std::string& path, const std::vector<std::uint16_t>& ports) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    for (const auto port : ports) out << port << '\n';
    if (!out) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

void print_profiles() {
  for (const auto name : arbiter::engine::profile_names()) {
    const auto* p = arbiter::engine::find_profile(name);
    std::printf("%-20.*s %.*s\n", static_cast<int>(name.size()), name.data(), static_cast<int>(p->summary.size()),
                p->summary.data());
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace arbiter;
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  const auto flags = sim::parse_sim_flags(args);
  if (!flags) {
    std::fprintf(stderr, "arbiter-sim: %s\n%.*s", flags.error().c_str(), static_cast<int>(sim::kSimUsage.size()),
                 sim::kSimUsage.data());
    return 2;
  }
  if (flags->help) {
    std::fwrite(sim::kSimUsage.data(), 1, sim::kSimUsage.size(), stdout);
    return 0;
  }
  if (flags->list_profiles) {
    print_profiles();
    return 0;
  }
  std::signal(SIGPIPE, SIG_IGN);

  net::io_context ioc(static_cast<int>(flags->threads));
  auto sim = sim::SimServer::create(ioc, flags->options);
  if (!sim) {
    std::fprintf(stderr, "arbiter-sim: %s\n", sim.error().c_str());
    return 2;
  }
  const auto ports = (*sim)->start();
  if (!ports) {
    std::fprintf(stderr, "arbiter-sim: %s\n", ports.error().c_str());
    return 1;
  }
  if (!flags->port_file.empty() && !write_port_file(flags->port_file, *ports)) {
    std::fprintf(stderr, "arbiter-sim: cannot write port file %s\n", flags->port_file.c_str());
    return 1;
  }
  std::string port_list;
  for (const auto p : *ports) {
    if (!port_list.empty()) port_list += ',';
    port_list += std::to_string(p);
  }
  log_event(EventLevel::kInfo, "listening",
            {{"model", (*sim)->model()}, {"profile", flags->options.profile}, {"ports", port_list}});

  // First signal: drain. A second one: stop at once.
  net::signal_set signals(ioc, SIGTERM, SIGINT);
  bool draining = false;
  std::function<void(const beast::error_code&, int)> on_signal = [&](const beast::error_code& ec, int sig) {
    if (ec) return;
    if (draining) {
      ioc.stop();
      return;
    }
    draining = true;
    log_event(EventLevel::kInfo, "draining", {{"signal", sig}});
    const auto deadline = std::chrono::milliseconds(static_cast<std::int64_t>(flags->drain_s * 1000));
    net::co_spawn(ioc, (*sim)->stop(deadline), [&](std::exception_ptr) {
      log_event(EventLevel::kInfo, "stopped");
      ioc.stop();
    });
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);

  std::vector<std::thread> pool;
  for (unsigned i = 1; i < flags->threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
  return 0;
}
