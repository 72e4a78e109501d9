#include "sim/sim_endpoint.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <chrono>

#include "core/bearer_token.hpp"

namespace arbiter::sim {

namespace {

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kPrometheus = "text/plain; version=0.0.4; charset=utf-8";

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

}  // namespace

SimEndpoint::SimEndpoint(net::io_context& ioc, const SimOptions& options, const engine::EngineConfig& config,
                         unsigned index, IoPool* workers)
    : index_(index),
      model_(served_model(options)),
      api_key_(options.api_key),
      seed_(options.seed),
      wanted_port_(options.port == 0 ? 0 : static_cast<std::uint16_t>(options.port + index)),
      adapters_(options.lora_modules),
      metrics_(model_, config),
      driver_(ioc, config, metrics_),
      limits_{.model = model_,
              .adapters = &adapters_,
              .config = &driver_.config(),
              .output_mean_tokens = options.output_mean_tokens,
              .seed = options.seed},
      faults_(options.faults),
      server_(ioc, ServerOptions{.address = options.address, .port = wanted_port_},
              [this](HttpRequest& req, ClientConnection& conn) { return handle(req, conn); }, workers) {}

std::expected<std::uint16_t, std::string> SimEndpoint::listen() { return server_.listen(); }

void SimEndpoint::start() {
  apply_faults(faults(), /*restart_slow_start=*/true);
  driver_.start();
  server_.start();
}

Faults SimEndpoint::faults() const {
  std::lock_guard lock(faults_mu_);
  return faults_;
}

std::expected<void, std::string> SimEndpoint::set_faults(const Faults& faults) {
  if (std::string err = faults_error(faults); !err.empty()) return std::unexpected(std::move(err));
  apply_faults(faults, /*restart_slow_start=*/true);
  return {};
}

void SimEndpoint::apply_faults(const Faults& faults, bool restart_slow_start) {
  {
    std::lock_guard lock(faults_mu_);
    faults_ = faults;
  }
  if (restart_slow_start) {
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(faults.slow_start_s));
    unhealthy_until_.store(faults.slow_start_s > 0 ? until.time_since_epoch().count() : 0);
  }
  driver_.set_kv_blocks(faults.kv_blocks);
}

bool SimEndpoint::starting() const {
  return Clock::now().time_since_epoch().count() < unhealthy_until_.load(std::memory_order_relaxed);
}

std::string SimEndpoint::lora_info(const std::vector<std::uint32_t>& running,
                                   const std::vector<std::uint32_t>& waiting) const {
  const auto names = [&](const std::vector<std::uint32_t>& numbers) {
    std::string out;
    for (const std::uint32_t n : numbers) out += (out.empty() ? "" : ",") + adapters_[n - 1];
    return out;
  };
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return fmt::format(
      "# HELP vllm:lora_requests_info Running stats on lora requests.\n"
      "# TYPE vllm:lora_requests_info gauge\n"
      "vllm:lora_requests_info{{max_lora=\"{}\",running_lora_adapters=\"{}\",waiting_lora_adapters=\"{}\"}} {:.3f}\n",
      driver_.config().max_loras, names(running), names(waiting), now);
}

std::string SimEndpoint::models_body() const {
  boost::json::object model{{"id", model_},
                            {"object", "model"},
                            {"created", 0},
                            {"owned_by", "arbiter-sim"},
                            {"root", model_},
                            {"parent", nullptr},
                            {"max_model_len", driver_.config().max_model_len}};
  boost::json::array data;
  data.push_back(std::move(model));
  for (const std::string& adapter : adapters_) {
    data.push_back(boost::json::object{{"id", adapter},
                                       {"object", "model"},
                                       {"created", 0},
                                       {"owned_by", "arbiter-sim"},
                                       {"root", adapter},
                                       {"parent", model_},
                                       {"max_model_len", driver_.config().max_model_len}});
  }
  return boost::json::serialize(boost::json::object{{"object", "list"}, {"data", std::move(data)}});
}

Task<void> SimEndpoint::send_body(ClientConnection& conn, http::status status, std::string body,
                                  std::string_view content_type) {
  http::response<http::string_body> res{status, 11};
  res.set(http::field::content_type, content_type);
  res.body() = std::move(body);
  co_await conn.send(res);
}

Task<void> SimEndpoint::send_error(ClientConnection& conn, const SimError& error) {
  std::string body = error_body(error);
  const auto status = static_cast<http::status>(error.status);
  co_await send_body(conn, status, std::move(body), kJson);
}

Task<void> SimEndpoint::handle(HttpRequest& req, ClientConnection& conn) {
  const std::string_view path = path_of(req.target());
  const bool get = req.method() == http::verb::get;
  const bool guarded = route_from_path(path) || path.starts_with("/admin/");
  if (guarded && !api_key_.empty() && !bearer_matches(req["authorization"], api_key_)) {
    SimError err{401, "invalid or missing API key", {}};
    co_await send_error(conn, err);
    co_return;
  }
  if (const auto route = route_from_path(path)) {
    if (req.method() != http::verb::post) {
      SimError err{405, "use POST", {}};
      co_await send_error(conn, err);
      co_return;
    }
    if (*route == Route::kEmbeddings) {
      co_await embeddings(req, conn);
    } else {
      co_await inference(*route, req, conn);
    }
    co_return;
  }
  if (path == "/health" && get) {
    if (starting()) {
      SimError err{503, "the engine is starting", {}};
      co_await send_error(conn, err);
      co_return;
    }
    std::string body = "{}";
    co_await send_body(conn, http::status::ok, std::move(body), kJson);
    co_return;
  }
  if (path == "/metrics" && get) {
    const EngineDriver::Stats stats = co_await driver_.stats();
    std::string text = metrics_.render(stats.engine, stats.in_flight_work_tokens);
    if (!adapters_.empty()) text += lora_info(stats.running_adapters, stats.waiting_adapters);
    co_await send_body(conn, http::status::ok, std::move(text), kPrometheus);
    co_return;
  }
  if (path == "/v1/models" && get) {
    std::string body = models_body();
    co_await send_body(conn, http::status::ok, std::move(body), kJson);
    co_return;
  }
  if (path == "/admin/faults") {
    co_await handle_admin(req, conn);
    co_return;
  }
  SimError err{404, "no route " + std::string(path), {}};
  co_await send_error(conn, err);
}

// GET: the faults as JSON. POST: a JSON object of the fields to change
// (others keep their values); answers the resulting faults. A POST that
// names slow_start_s restarts the slow-start window from now.
Task<void> SimEndpoint::handle_admin(HttpRequest& req, ClientConnection& conn) {
  if (req.method() == http::verb::post) {
    Faults next = faults();
    if (auto ok = apply_faults_json(next, req.body()); !ok) {
      SimError err{400, ok.error(), {}};
      co_await send_error(conn, err);
      co_return;
    }
    boost::system::error_code ec;
    const auto doc = boost::json::parse(req.body(), ec);
    apply_faults(next, !ec && doc.is_object() && doc.get_object().contains("slow_start_s"));
  } else if (req.method() != http::verb::get) {
    SimError err{405, "use GET or POST", {}};
    co_await send_error(conn, err);
    co_return;
  }
  std::string body = faults_json(faults());
  co_await send_body(conn, http::status::ok, std::move(body), kJson);
}

}  // namespace arbiter::sim
