#include "support/redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "support/free_port.hpp"
#include "support/test_clock.hpp"

namespace arbiter::test {

namespace {

bool accepts(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

RedisServer::RedisServer() : dir_("redis"), port_(0) {
  // The port may be taken by another test's server between free_port() and
  // redis-server's bind: then it exits, and a new port is tried.
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = free_port();
    if (start()) return;
  }
  throw std::runtime_error("redis-server exited: " + read_file(dir_.file("stdout")));
}

bool RedisServer::start() {
  child_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/usr/bin/redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", dir_.path()},
      dir_.file("stdout"), dir_.file("stderr"));
  const auto deadline = Clock::now() + Millis(10'000);
  while (!accepts(port_)) {
    if (child_->poll()) return false;
    if (Clock::now() > deadline) throw std::runtime_error("redis-server does not accept connections");
    std::this_thread::sleep_for(Millis(10));
  }
  return true;
}

void RedisServer::kill() {
  child_->signal(SIGKILL);
  (void)child_->wait(Millis(5'000));
}

void RedisServer::restart() {
  kill();
  if (!start()) throw std::runtime_error("redis-server did not restart: " + read_file(dir_.file("stdout")));
}

void RedisServer::pause() { child_->signal(SIGSTOP); }
void RedisServer::resume() { child_->signal(SIGCONT); }

std::string RedisServer::cli(const std::string& args) const {
  const std::string command = "redis-cli -p " + std::to_string(port_) + " " + args + " 2>&1";
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

bool poll_until(const std::function<bool()>& done, Millis timeout) {
  const auto until = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(Millis(50));
  }
  return true;
}

}  // namespace arbiter::test
