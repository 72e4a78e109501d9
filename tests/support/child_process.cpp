#include "support/child_process.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "support/temp_dir.hpp"

namespace arbiter::test {
namespace {

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv, const std::string& stdout_path,
                           const std::string& stderr_path, std::optional<unsigned> fd_limit) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  // Everything the child needs is prepared before fork: between fork and
  // exec a multi-threaded parent's child may only make async-signal-safe calls.
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = ::getpid();

  pid_ = ::fork();
  if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    // Sockets of the test process (fake upstreams, clients) must not live on
    // in the child: a copy would keep a connection open after we close it.
    ::close_range(3, ~0U, 0);
    if (fd_limit) {
      const rlimit limit{.rlim_cur = *fd_limit, .rlim_max = *fd_limit};
      if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(125);
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !poll()) {
    ::kill(pid_, SIGKILL);
    wait(Millis(10'000));
  }
}

void ChildProcess::signal(int sig) {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

std::optional<int> ChildProcess::poll() {
  if (status_) return status_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) status_ = decode_status(status);
  return status_;
}

std::optional<int> ChildProcess::wait(Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!poll()) {
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(Millis(5));
  }
  return status_;
}

CommandResult run_command(std::vector<std::string> argv, Millis timeout) {
  TempDir dir("arbiter-cmd");
  const auto out_path = dir.file("stdout");
  const auto err_path = dir.file("stderr");
  CommandResult result;
  {
    ChildProcess child(std::move(argv), out_path, err_path);
    auto code = child.wait(timeout);
    if (!code) {
      child.signal(SIGKILL);
      code = child.wait(Millis(10'000));
    }
    result.exit_code = code.value_or(-1);
  }
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

}  // namespace arbiter::test
