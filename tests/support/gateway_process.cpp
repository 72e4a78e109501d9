#include "support/gateway_process.hpp"

#include <charconv>
#include <csignal>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/json/parse.hpp>

namespace arbiter::test {
namespace {

// The port, once the file holds a complete number (a newline ends it, or
// the same digits are read twice in a row: no half-written file is taken).
std::optional<uint16_t> read_port_file(const std::string& path, std::string& last_seen) {
  const std::string text = read_file(path);
  std::size_t end = 0;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  if (end == 0) return std::nullopt;
  const bool terminated = end < text.size();
  const bool stable = text == last_seen;
  last_seen = text;
  if (!terminated && !stable) return std::nullopt;
  unsigned value = 0;
  std::from_chars(text.data(), text.data() + end, value);
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<uint16_t>(value);
}

// The config with `admin: {port: 0}` added when it has no admin section.
std::string with_free_admin_port(const std::string& yaml) {
  if (yaml.starts_with("admin:") || yaml.find("\nadmin:") != std::string::npos) return yaml;
  return yaml + (yaml.empty() || yaml.back() == '\n' ? "" : "\n") + "admin: {port: 0}\n";
}

}  // namespace

std::string arbiter_binary() {
  if (const char* env = std::getenv("ARBITER_BINARY")) return env;
  return ARBITER_BINARY;
}

GatewayProcess::GatewayProcess(const std::string& config_yaml, Millis start_timeout,
                               std::optional<unsigned> fd_limit)
    : dir_("arbiter-gw") {
  dir_.write("config.yaml", with_free_admin_port(config_yaml));
  const std::string port_file = dir_.file("port");
  child_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{arbiter_binary(), "--config", config_path(), "--port-file", port_file,
                               "--admin-port-file", dir_.file("admin_port")},
      dir_.file("stdout"), dir_.file("stderr"), fd_limit);
  const auto deadline = Clock::now() + start_timeout;
  std::string last_seen;
  for (;;) {
    if (auto port = read_port_file(port_file, last_seen)) {
      port_ = *port;
      std::string admin_seen;
      admin_port_ = read_port_file(dir_.file("admin_port"), admin_seen).value_or(0);
      return;
    }
    if (auto code = child_->poll()) {
      throw std::runtime_error("arbiter exited with " + std::to_string(*code) +
                               " before writing its port; stderr:\n" + stderr_text());
    }
    if (Clock::now() >= deadline) {
      throw std::runtime_error("arbiter did not write its port file in time; stderr:\n" +
                               stderr_text());
    }
    std::this_thread::sleep_for(Millis(10));
  }
}

GatewayProcess::~GatewayProcess() = default;  // ChildProcess kills and reaps

void GatewayProcess::terminate() { child_->signal(SIGTERM); }
void GatewayProcess::kill() { child_->signal(SIGKILL); }

std::string GatewayProcess::stdout_text() const { return read_file(dir_.file("stdout")); }
std::string GatewayProcess::stderr_text() const { return read_file(dir_.file("stderr")); }

std::vector<boost::json::object> GatewayProcess::access_log() const {
  std::vector<boost::json::object> out;
  std::istringstream in(stdout_text());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() != '{') continue;
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    if (!ec && v.is_object()) out.push_back(v.as_object());
  }
  return out;
}

std::optional<boost::json::object> GatewayProcess::wait_for_log(
    const std::function<bool(const boost::json::object&)>& pred, Millis timeout) const {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    for (auto& line : access_log()) {
      if (pred(line)) return line;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(Millis(20));
  }
}

std::optional<double> GatewayProcess::wait_for_metric(const std::string& name,
                                                      const std::function<bool(double)>& pred, Millis timeout,
                                                      const Labels& labels, uint16_t port,
                                                      const Headers& headers) const {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const HttpResponse res = http_get(port != 0 ? port : admin_port_, "/metrics", headers);
    const auto v = res.status == 200 ? metric_value(res.body, name, labels) : std::nullopt;
    if ((v && pred(*v)) || Clock::now() >= deadline) return v;
    std::this_thread::sleep_for(Millis(20));
  }
}

CommandResult run_arbiter_check(const std::string& config_yaml, Millis timeout) {
  TempDir dir("arbiter-check");
  const auto path = dir.write("config.yaml", config_yaml);
  return run_command({arbiter_binary(), "--config", path, "--check"}, timeout);
}

}  // namespace arbiter::test
