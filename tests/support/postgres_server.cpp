#include "support/postgres_server.hpp"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <thread>

#include "support/free_port.hpp"
#include "support/test_clock.hpp"

namespace arbiter::test {

namespace {

// The newest installed server's programs (/usr/lib/postgresql/<version>/bin).
std::string server_bin() {
  std::string best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = entry.path().filename().string();
    const int version = std::atoi(name.c_str());
    if (version > best_version && std::filesystem::exists(entry.path() / "bin" / "postgres")) {
      best_version = version;
      best = (entry.path() / "bin").string();
    }
  }
  if (best.empty()) throw std::runtime_error("no PostgreSQL server under /usr/lib/postgresql (Debian's postgresql)");
  return best;
}

}  // namespace

PostgresServer::PostgresServer() : dir_("postgres"), bin_(server_bin()) {
  if (::geteuid() == 0) {
    const passwd* owner = ::getpwnam("postgres");
    if (owner == nullptr) throw std::runtime_error("no postgres user to run the server as");
    if (::chown(dir_.path().c_str(), owner->pw_uid, owner->pw_gid) != 0) {
      throw std::runtime_error("cannot hand " + dir_.path() + " to postgres");
    }
  }
  const CommandResult made = run_command(
      as_owner({bin_ + "/initdb", "--auth=trust", "--username=arbiter", "--encoding=UTF8", "--locale=C", "--no-sync",
                "-D", dir_.file("data")}),
      Millis(120'000));
  if (made.exit_code != 0) throw std::runtime_error("initdb failed: " + made.out + made.err);
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = free_port();
    if (start()) return;
  }
  throw std::runtime_error("postgres exited: " + read_file(dir_.file("stderr")));
}

PostgresServer::~PostgresServer() {
  if (child_) {
    child_->signal(SIGQUIT);  // immediate shutdown: the backends end with it
    (void)child_->wait(Millis(10'000));
  }
}

std::vector<std::string> PostgresServer::as_owner(std::vector<std::string> argv) const {
  if (::geteuid() != 0) return argv;
  std::vector<std::string> wrapped{"/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

std::string PostgresServer::url(const std::string& db) const {
  return "postgresql://arbiter@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

bool PostgresServer::start() {
  child_ = std::make_unique<ChildProcess>(
      as_owner({bin_ + "/postgres", "-D", dir_.file("data"), "-p", std::to_string(port_), "-c",
                "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "fsync=off", "-c",
                "max_connections=50"}),
      dir_.file("stdout"), dir_.file("stderr"));
  const std::string ping = "host=127.0.0.1 port=" + std::to_string(port_) + " user=arbiter dbname=postgres connect_timeout=2";
  const auto deadline = Clock::now() + Millis(30'000);
  while (PQping(ping.c_str()) != PQPING_OK) {
    if (child_->poll()) return false;
    if (Clock::now() > deadline) throw std::runtime_error("postgres does not accept connections");
    std::this_thread::sleep_for(Millis(20));
  }
  return true;
}

void PostgresServer::kill() {
  child_->signal(SIGKILL);
  (void)child_->wait(Millis(5'000));
}

void PostgresServer::restart() {
  if (!child_->poll()) kill();
  // Its old backends may hold its shared memory a moment after the kill:
  // the new server refuses to start until they are gone.
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (start()) return;
    std::this_thread::sleep_for(Millis(100));
  }
  throw std::runtime_error("postgres did not restart: " + read_file(dir_.file("stderr")));
}

void PostgresServer::create_database(const std::string& db) {
  (void)query("postgres", "CREATE DATABASE " + db);
}

std::vector<std::string> PostgresServer::query(const std::string& db, const std::string& sql) const {
  const CommandResult r = run_command({"/usr/bin/psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d",
                                       url(db), "-c", "SET search_path TO arbiter, public", "-c", sql},
                                      Millis(60'000));
  if (r.exit_code != 0) throw std::runtime_error("psql: " + sql + ": " + r.err);
  std::vector<std::string> rows;
  std::size_t from = 0;
  while (from < r.out.size()) {
    std::size_t end = r.out.find('\n', from);
    if (end == std::string::npos) end = r.out.size();
    if (end > from) rows.push_back(r.out.substr(from, end - from));
    from = end + 1;
  }
  return rows;
}

}  // namespace arbiter::test
