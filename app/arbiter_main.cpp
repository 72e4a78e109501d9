// arbiter: the gateway binary. Parses flags, loads the config, serves until
// SIGTERM/SIGINT, then drains and exits 0.

#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/config_exposure.hpp"
#include "observability/event_log.hpp"
#include "gateway/config_print.hpp"
#include "gateway/config_yaml.hpp"
#include "app/embedded_sims.hpp"
#include "gateway/gateway.hpp"
#include "gateway/pipeline_registry.hpp"
#include "http/connection_cap.hpp"
#include "http/server.hpp"
#include "gateway/store/database.hpp"
#include "gateway/store/store_writer.hpp"

namespace {

constexpr const char* kUsage =
    "usage: arbiter --config FILE [--check | --print-config | --audit-verify]\n"
    "               [--port-file PATH] [--admin-port-file PATH]\n"
    "  --config FILE     YAML configuration (see docs/configuration.md)\n"
    "  --check           validate the configuration and exit (0 ok, 2 errors); says\n"
    "                    which listed classes inherit a built-in class's settings\n"
    "  --print-config    validate, then print the effective configuration (every\n"
    "                    default filled in) as YAML and exit\n"
    "  --audit-verify    check the audit trail in the config's store (store.path or .url):\n"
    "                    every batch's hash and link (0 intact, 1 not, 2 errors)\n"
    "  --port-file PATH  write the bound port to PATH once listening\n"
    "  --admin-port-file PATH  the same for the admin listener (admin.enabled)\n";

struct Flags {
  std::string config;
  std::string port_file;
  std::string admin_port_file;
  bool check = false;
  bool print_config = false;
  bool audit_verify = false;
};

std::optional<Flags> parse_flags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check") {
      f.check = true;
    } else if (a == "--print-config") {
      f.print_config = true;
    } else if (a == "--audit-verify") {
      f.audit_verify = true;
    } else if ((a == "--config" || a == "--port-file" || a == "--admin-port-file") && i + 1 < argc) {
      (a == "--config" ? f.config : a == "--port-file" ? f.port_file : f.admin_port_file) = argv[++i];
    } else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "arbiter: unknown or incomplete argument '%s'\n%s", a.c_str(), kUsage);
      return std::nullopt;
    }
  }
  if (f.config.empty()) {
    std::fputs(kUsage, stderr);
    return std::nullopt;
  }
  return f;
}

// --audit-verify: the trail's every batch against its rows and the batch
// before it (docs/audit.md, "Verification").
int verify_audit(const arbiter::StoreConfig& settings) {
  const bool postgres = !settings.url.empty() || !settings.url_env.empty();
  const std::string name = postgres ? "the PostgreSQL store" : settings.path;
  const char* path = name.c_str();
  if (!postgres && !std::filesystem::exists(settings.path)) {
    std::fprintf(stderr, "arbiter: %s: no such store\n", path);
    return 2;
  }
  auto db = arbiter::store::open_database(settings, "verify");
  if (!db) {
    std::fprintf(stderr, "arbiter: %s\n", db.error().c_str());
    return 2;
  }
  auto verdict = (*db)->verify();
  if (!verdict) {
    std::fprintf(stderr, "arbiter: %s: %s\n", path, verdict.error().c_str());
    return 2;
  }
  if (!verdict->ok) {
    std::printf("%s: audit trail NOT intact: %s\n", path, verdict->problem.c_str());
    return 1;
  }
  std::printf("%s: audit trail intact (%lld batches, %lld rows)\n", path,
              static_cast<long long>(verdict->batches), static_cast<long long>(verdict->rows));
  return 0;
}

// Written via a temporary file and rename, so a reader never sees it half
// written.
bool write_port_file(const std::string& path, uint16_t port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!(out << port << '\n')) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

// Each client and upstream connection is a descriptor: the soft limit
// (often 1024) goes up to the hard one, logged either way. Returns the
// soft limit now in force (0: unknown).
std::size_t raise_fd_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  const rlim_t before = limit.rlim_cur;
  if (before < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) limit.rlim_cur = before;
  }
  arbiter::log_event(arbiter::EventLevel::kInfo, "fd_limit",
                     {{"soft_before", before}, {"soft", limit.rlim_cur}, {"hard", limit.rlim_max}});
  return static_cast<std::size_t>(std::min<rlim_t>(limit.rlim_cur, 10'000'000));
}

// listener.max_connections, or with 0 the default from the descriptors
// (http/connection_cap.hpp), logged.
std::size_t connection_cap(const arbiter::Config& cfg, std::size_t fd_limit) {
  if (cfg.listener.max_connections > 0 || fd_limit == 0) return cfg.listener.max_connections;
  std::size_t upstream = 0;
  for (const auto& model : cfg.models) {
    for (const auto& backend : model.backends) {
      upstream += backend.max_concurrency * (backend.type == arbiter::BackendType::kSim ? 2 : 1);
    }
  }
  const std::size_t cap = arbiter::default_connection_cap(fd_limit, upstream);
  arbiter::log_event(arbiter::EventLevel::kInfo, "connection_cap",
                     {{"max_connections", cap}, {"fd_limit", fd_limit}, {"upstream_descriptors", upstream}});
  return cap;
}

// The gateway's connections first (their streams still need the engines),
// then the admin listener (its /readyz says "not ready" meanwhile), then
// the simulated engines. Queued requests are answered 503 at once; running
// ones are stopped, with a final error event, just before the deadline.
arbiter::Task<void> drain_all(arbiter::Gateway& gateway, arbiter::HttpServer& server, arbiter::HttpServer* admin,
                              arbiter::EmbeddedSims& sims, std::chrono::milliseconds deadline) {
  // Batch lines first: they stop (resumed after the restart) and end while
  // the io_context runs; then queued requests are refused, running ones finish.
  co_await gateway.stop_batches(deadline);
  gateway.begin_drain();
  co_await server.drain(deadline, [&gateway] { gateway.stop_running(); });
  if (admin) co_await admin->drain(std::chrono::milliseconds(1000));
  co_await gateway.flush_traces(std::chrono::milliseconds(2000));  // the requests' last spans
  co_await sims.stop(std::chrono::milliseconds(1000));
}

// Binds a listener and writes its port file; false (reported) on failure.
bool open_listener(arbiter::HttpServer& server, const std::string& port_file, const char* what) {
  const auto port = server.listen();
  if (!port) {
    // The config section that names the address and port.
    const char* section = std::string_view(what) == "admin" ? "admin" : "listener";
    std::fprintf(stderr, "arbiter: %s listener: %s (%s.address and %s.port in the config)\n", what,
                 port.error().c_str(), section, section);
    return false;
  }
  if (!port_file.empty() && !write_port_file(port_file, *port)) {
    std::fprintf(stderr, "arbiter: cannot write port file %s\n", port_file.c_str());
    return false;
  }
  arbiter::log_event(arbiter::EventLevel::kInfo, "listening", {{"listener", what}, {"port", *port}});
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace arbiter;
  const auto flags = parse_flags(argc, argv);
  if (!flags) return 2;

  // The text too: it is the config's first version (hash, rollback).
  std::string config_text;
  std::ifstream config_file(flags->config);
  if (config_file) {
    std::stringstream text;
    text << config_file.rdbuf();
    config_text = text.str();
  }
  auto config = config_file ? parse_config(config_text)
                            : std::expected<Config, ConfigErrors>(std::unexpect, ConfigErrors{flags->config + ": cannot open file"});
  if (!config) {
    std::fprintf(stderr, "arbiter: %zu error(s) in %s:\n", config.error().size(), flags->config.c_str());
    for (const auto& e : config.error()) std::fprintf(stderr, "  %s\n", e.c_str());
    return 2;
  }
  if (flags->print_config) {
    // What runs for each inference request, in order: a comment, not a key.
    std::printf("# pipeline: %s\n", describe_pipeline(*config).c_str());
    std::fputs(arbiter::config_to_yaml(*config).c_str(), stdout);
    return 0;
  }
  if (flags->check) {
    for (const auto& name : config->inherited_classes) {
      std::printf("%s: class '%s' starts from the built-in class's scheduling settings and cap "
                  "(--print-config shows what applies)\n",
                  flags->config.c_str(), name.c_str());
    }
    // Per-class pools split a model into several entries: count the names.
    std::set<std::string> models;
    for (const auto& m : config->models) models.insert(m.name);
    for (const std::string& warning : exposure_warnings(*config)) {
      std::printf("%s: warning: %s\n", flags->config.c_str(), warning.c_str());
    }
    std::printf("%s: configuration OK (%zu models in %zu pools, %zu classes, %zu tenants)\n",
                flags->config.c_str(), models.size(), config->models.size(), config->classes.size(),
                config->tenants.size());
    return 0;
  }
  // store.path relative to the config file's folder, as the docs say.
  StoreConfig store_settings = config->store;
  if (std::filesystem::path(store_settings.path).is_relative()) {
    store_settings.path = (std::filesystem::path(flags->config).parent_path() / store_settings.path).string();
  }
  if (flags->audit_verify) return verify_audit(store_settings);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);  // until the handler below is installed
  std::signal(SIGUSR1, SIG_IGN);  // likewise (its default action kills)
  const std::size_t fd_limit = raise_fd_limit();

  const unsigned threads =
      config->listener.threads ? config->listener.threads : std::max(1u, std::thread::hardware_concurrency());
  IoPool io(threads);
  net::io_context& ioc = io.context(0);
  // Signals are caught from here on: one that arrives before the handler is
  // set below (a SIGTERM or SIGHUP right after the port file appears) waits
  // for it instead of killing the process undrained.
  net::signal_set signals(ioc, SIGTERM, SIGINT, SIGHUP);
  signals.add(SIGUSR1);
  // Simulated engines first: their ports become the sim backends' addresses.
  auto sims = EmbeddedSims::start(*config, ioc, io);
  if (!sims) {
    std::fprintf(stderr, "arbiter: cannot start simulated engine %s\n", sims.error().c_str());
    return 1;
  }
  std::unique_ptr<BatchedLineWriter> access_log;
  if (config->log.access_log) {
    auto opened = BatchedLineWriter::open({.file = config->log.access_file, .flush_every = config->log.access_flush});
    if (!opened) {
      std::fprintf(stderr, "arbiter: log.access_file: %s\n", opened.error().c_str());
      return 1;
    }
    access_log = std::move(*opened);
  }
  std::unique_ptr<StoreWriter> store;
  if (config->store.enabled) {
    auto opened = StoreWriter::open(store_settings);
    if (!opened) {
      std::fprintf(stderr, "arbiter: %s\n", opened.error().c_str());
      return 1;
    }
    store = std::move(*opened);
  }
  std::optional<BatchPlace> batches;
  if (config->batches.enabled) {
    std::filesystem::path dir = config->batches.dir;
    if (dir.is_relative()) dir = std::filesystem::path(flags->config).parent_path() / dir;
    batches = BatchPlace{.dir = dir, .store = store_settings};
  }
  Gateway gateway(std::move(*config), config_text, "startup:" + flags->config, threads, net::make_strand(ioc),
                  std::move(access_log), std::move(store), std::move(batches));
  gateway.set_config_preparer([&sims](Config& next) { return (*sims)->attach(next); });
  const Config& cfg = gateway.config();
  std::shared_ptr<ServerTls> tls;
  if (cfg.listener.tls.enabled()) {
    auto loaded = ServerTls::load(cfg.listener.tls);
    if (!loaded) {
      std::fprintf(stderr, "arbiter: listener.tls: %s\n", loaded.error().c_str());
      return 1;
    }
    tls = std::move(*loaded);
  }
  const ServerOptions server_options{.address = cfg.listener.address,
                                     .port = cfg.listener.port,
                                     .max_header_bytes = cfg.limits.max_header_bytes,
                                     .max_body_bytes = cfg.limits.max_body_bytes,
                                     // The Batch API's uploads: a limit of their own.
                                     .large_body_prefix = cfg.batches.enabled ? "/v1/files" : "",
                                     .large_body_bytes = cfg.batches.max_file_bytes,
                                     .header_timeout = cfg.timeouts.client_header,
                                     .body_timeout = cfg.timeouts.client_body,
                                     .keepalive_idle = cfg.timeouts.keepalive_idle,
                                     .write_timeout = cfg.timeouts.client_write,
                                     .tls = tls,
                                     .max_connections = connection_cap(cfg, fd_limit),
                                     .on_refusal = [&gateway](const HttpRefusal& r) { gateway.note_refusal(r); }};
  HttpServer server(ioc, server_options,
                    [&gateway](HttpRequest& req, ClientConnection& conn) {
                      return gateway.handle(req, conn);
                    },
                    &io);
  // The admin listener: the same limits and timeouts; its own handler.
  std::unique_ptr<HttpServer> admin;
  if (cfg.admin.enabled) {
    ServerOptions options = server_options;
    options.address = cfg.admin.address;
    options.port = cfg.admin.port;
    options.tls = nullptr;  // plain HTTP: loopback, or a pod network with the token
    options.large_body_prefix.clear();  // no uploads there
    admin = std::make_unique<HttpServer>(
        ioc, options, [&gateway](HttpRequest& req, ClientConnection& conn) { return gateway.handle_admin(req, conn); },
        &io);
    if (!open_listener(*admin, flags->admin_port_file, "admin")) return 1;
  } else {
    log_event(EventLevel::kInfo, "admin_listener_off",
              {{"note", "admin.enabled is false: /metrics and /admin/* are served nowhere"}});
  }
  for (const std::string& warning : exposure_warnings(cfg)) {
    log_event(EventLevel::kWarn, "exposed", {{"note", warning}});
  }
  if (!open_listener(server, flags->port_file, "api")) return 1;
  server.start();
  if (admin) admin->start();
  gateway.set_ready(true);
  log_event(EventLevel::kInfo, "started",
            {{"address", cfg.listener.address},
             {"tls", tls != nullptr},
             {"threads", threads},
             {"models", cfg.models.size()},
             {"simulated_engines", (*sims)->size()},
             {"admin_listener", admin != nullptr}});

  // First signal: drain. A second one: stop at once. SIGHUP reloads the
  // config file.
  // SIGUSR1 reopens the access log's file (logrotate). The access log's
  // buffered lines are written when the gateway is destroyed, after io.run.
  bool draining = false;
  std::function<void(const beast::error_code&, int)> on_signal = [&](const beast::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGUSR1) {
      gateway.reopen_access_log();
      signals.async_wait(on_signal);
      return;
    }
    if (sig == SIGHUP) {
      // Reload the config file (docs/deployment.md, "Config changes"); a
      // bad one is logged and the running config keeps serving.
      std::ifstream in(flags->config);
      std::stringstream text;
      text << in.rdbuf();
      if (!in) {
        log_event(EventLevel::kError, "config_rejected", {{"source", "sighup"}, {"first", flags->config + ": cannot read"}});
      } else {
        gateway.reload(text.str(), "sighup:" + flags->config);
      }
      signals.async_wait(on_signal);
      return;
    }
    if (draining) {
      log_event(EventLevel::kWarn, "second_signal", {{"note", "second signal, stopping now"}});
      io.stop();
      return;
    }
    draining = true;
    gateway.set_ready(false);
    log_event(EventLevel::kInfo, "draining", {{"signal", sig}, {"deadline_ms", cfg.timeouts.drain.count()}});
    net::co_spawn(ioc, drain_all(gateway, server, admin.get(), **sims, cfg.timeouts.drain), [&](std::exception_ptr) {
      log_event(EventLevel::kInfo, "stopped");
      io.stop();
    });
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);

  io.run();
  return 0;
}
