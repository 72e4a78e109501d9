// A child process started with fork/exec, stdout and stderr redirected to
// files. Killed (SIGKILL) and reaped when the object goes away, and also
// when the test process dies (PR_SET_PDEATHSIG), so a crashed test run
// never leaves gateways behind. Start it from the test's main thread: the
// death signal follows the thread that forked.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "support/test_clock.hpp"

namespace arbiter::test {

class ChildProcess {
 public:
  // `fd_limit`: RLIMIT_NOFILE (soft and hard) of the child, when given.
  ChildProcess(std::vector<std::string> argv, const std::string& stdout_path,
               const std::string& stderr_path, std::optional<unsigned> fd_limit = std::nullopt);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig);
  // Exit code (>= 0) or -signal number once the process ended; nullopt if
  // still running after `timeout`.
  std::optional<int> wait(Millis timeout);
  // Exit status without waiting; nullopt while running.
  std::optional<int> poll();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Runs a command to completion (bounded by `timeout`, then SIGKILL).
struct CommandResult {
  int exit_code = -1;  // -signal when killed
  std::string out;
  std::string err;
};
CommandResult run_command(std::vector<std::string> argv, Millis timeout);

}  // namespace arbiter::test
