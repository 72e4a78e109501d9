// A real redis-server (Debian's) on a free loopback port, for the shared
// quota tests: no persistence, killed and reaped with the object. kill(),
// restart() (same port, empty) and pause()/resume() (SIGSTOP/SIGCONT: a
// hung server whose connections stay open) stage the store's failures.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

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

 private:
  bool start();  // false when redis-server exits (its port was taken)
  TempDir dir_;
  uint16_t port_;
  std::unique_ptr<ChildProcess> child_;
};

}  // namespace arbiter::test
