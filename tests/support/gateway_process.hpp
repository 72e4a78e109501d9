// Runs build/arbiter as a child process against a YAML config written to a
// private temp dir: `arbiter --config FILE --port-file PORTFILE
// --admin-port-file ADMINPORTFILE`. The
// constructor returns once the gateway has written its bound port (it is
// listening then). stdout (the JSON access log) and stderr go to files.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/metrics_text.hpp"
#include "support/temp_dir.hpp"
#include "support/test_clock.hpp"

namespace arbiter::test {

// Path of the arbiter binary under test.
std::string arbiter_binary();

class GatewayProcess {
 public:
  // Throws std::runtime_error (with the gateway's stderr) if the port file
  // does not appear within `start_timeout` or the process exits first.
  // `fd_limit`: the process's RLIMIT_NOFILE, soft and hard (the gateway
  // raises its soft limit to the hard one).
  explicit GatewayProcess(const std::string& config_yaml, Millis start_timeout = Millis(20'000),
                          std::optional<unsigned> fd_limit = std::nullopt);
  ~GatewayProcess();
  GatewayProcess(const GatewayProcess&) = delete;
  GatewayProcess& operator=(const GatewayProcess&) = delete;

  uint16_t port() const { return port_; }
  // The admin listener's port (/metrics, /admin/*), 0 where the config turns
  // it off: it is bound before the main port file is written. A config with
  // no `admin:` section gets `admin: {port: 0}`, so gateways started side by
  // side do not race for the default port.
  uint16_t admin_port() const { return admin_port_; }
  pid_t pid() const { return child_->pid(); }

  void terminate();  // SIGTERM
  void kill();       // SIGKILL
  // Exit code (or -signal) once exited; nullopt if still running after timeout.
  std::optional<int> wait_exit(Millis timeout) { return child_->wait(timeout); }
  bool running() { return !child_->poll().has_value(); }

  std::string stdout_text() const;
  std::string stderr_text() const;
  // stdout lines that parse as JSON objects (the access log).
  std::vector<boost::json::object> access_log() const;
  // Polls the access log until a line satisfies `pred`.
  std::optional<boost::json::object> wait_for_log(
      const std::function<bool(const boost::json::object&)>& pred, Millis timeout) const;

  // Polls GET /metrics (on `port`, the admin listener's by default; `headers`
  // for the admin token) until the named sample satisfies `pred`; the last
  // value seen. For what the observers count once an answer has gone out
  // (requests, durations, tokens, upstream errors, resumes, breaker stages):
  // a client can read its whole answer before those move.
  std::optional<double> wait_for_metric(const std::string& name, const std::function<bool(double)>& pred,
                                        Millis timeout, const Labels& labels = {}, uint16_t port = 0,
                                        const Headers& headers = {}) const;

  const TempDir& dir() const { return dir_; }
  std::string config_path() const { return dir_.file("config.yaml"); }

 private:
  TempDir dir_;
  std::unique_ptr<ChildProcess> child_;
  uint16_t port_ = 0;
  uint16_t admin_port_ = 0;
};

// `arbiter --config <yaml in a temp file> --check`: exit code and output.
CommandResult run_arbiter_check(const std::string& config_yaml, Millis timeout = Millis(20'000));

}  // namespace arbiter::test
