// A real redis-server (Debian's) on a free loopback port, for the shared
// quota and result-cache tests: no persistence, killed and reaped with the object. kill(),
// restart() (same port, empty) and pause()/resume() (SIGSTOP/SIGCONT: a
// hung server whose connections stay open) stage the store's failures.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_clock.hpp"

namespace arbiter::test {

class RedisServer {
 public:
  RedisServer();
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  void kill();
  void restart();
  void pause();
  void resume();
  // What redis-cli prints for `args` against this server (trailing newline
  // removed): tests read the shared state itself to know when a replica's
  // store traffic has landed, instead of sleeping.
  std::string cli(const std::string& args) const;

 private:
  bool start();  // false when redis-server exits (its port was taken)
  TempDir dir_;
  uint16_t port_;
  std::unique_ptr<ChildProcess> child_;
};

// Polls `done` (50 ms apart) until it holds or `timeout` passes; whether it held.
bool poll_until(const std::function<bool()>& done, Millis timeout);

}  // namespace arbiter::test
