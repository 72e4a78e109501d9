// One PostgreSQL connection that never holds its caller longer than a
// deadline (5 s to connect, 10 s a round trip): non-blocking, every wait
// bounded. A statement's failure, or the connection's, drops it (its
// transaction with it); the next connect() makes a new one. Used by the
// usage and audit store (postgres_store.hpp) and the Batch API's records
// (gateway/batch/batch_db.hpp). Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct pg_conn;
struct pg_result;

namespace arbiter::store {

class PgConnection {
 public:
  // A statement's rows, as text.
  class Result {
   public:
    Result() = default;
    explicit Result(pg_result* r) : r_(r) {}
    int rows() const;
    int columns() const;
    std::string text(int row, int col) const;
    int64_t i64(int row, int col) const;
    double real(int row, int col) const;

   private:
    struct Clear {
      void operator()(pg_result* r) const;
    };
    std::unique_ptr<pg_result, Clear> r_;
  };

  explicit PgConnection(std::string conninfo) : conninfo_(std::move(conninfo)) {}
  ~PgConnection() { drop(); }
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Why `conninfo` cannot be used, if it cannot: it does not parse, or it
  // holds a password where one is not allowed.
  static std::optional<std::string> conninfo_error(const std::string& conninfo, bool allow_password);

  // Connected; `setup` runs on each new connection, and its failure is the
  // connection's. A connection that failed within the last second is not
  // tried again: its error comes back at once.
  std::expected<void, std::string> connect(const std::function<std::expected<void, std::string>()>& setup = {});
  bool up() const;
  // Counts the connections made: a caller's state tied to one (a session
  // lock) is gone once this moves.
  uint64_t generation() const { return generation_; }

  // One statement (or several, without parameters) and its last result.
  std::expected<Result, std::string> run(const char* sql, const std::vector<std::string>& params = {});
  std::expected<void, std::string> run_all(std::initializer_list<const char*> statements);
  void drop();

 private:
  std::expected<void, std::string> open(std::chrono::steady_clock::time_point deadline);

  std::string conninfo_;
  pg_conn* conn_ = nullptr;
  uint64_t generation_ = 0;
  std::chrono::steady_clock::time_point failed_at_{};
  std::string failed_why_;  // the last connection's failure, while it is recent
};

}  // namespace arbiter::store
