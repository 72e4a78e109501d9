// A real PostgreSQL server (Debian's postgresql) for the store's tests: a
// cluster made by initdb in a temporary folder, listening on a free loopback
// port only, trust authentication for its one user `arbiter`, no fsync (the
// tests kill processes, not the machine). Run as the `postgres` user when
// the tests run as root (PostgreSQL refuses root). kill() (SIGKILL to the
// server: its backends end as they see it gone) and restart() (same port,
// same data, after crash recovery) stage the store's outages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::test {

class PostgresServer {
 public:
  PostgresServer();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  uint16_t port() const { return port_; }
  // A connection string to database `db` (made by create_database).
  std::string url(const std::string& db = "postgres") const;
  // A new, empty database: one per test keeps tests apart on one server.
  void create_database(const std::string& db);

  void kill();
  void restart();

  // psql's answer to `sql` on `db` (tables found in the store's `arbiter`
  // schema first), one line per row, fields separated by '|'.
  std::vector<std::string> query(const std::string& db, const std::string& sql) const;

 private:
  bool start();  // false when the server exits (its port was taken)
  std::vector<std::string> as_owner(std::vector<std::string> argv) const;
  TempDir dir_;
  std::string bin_;  // the server's programs' folder
  uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> child_;
};

}  // namespace arbiter::test
