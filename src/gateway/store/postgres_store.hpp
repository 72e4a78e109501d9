// The usage and audit store in PostgreSQL (docs/audit.md), for several
// replicas sharing one database: the SQLite store's tables in a schema of
// their own (`arbiter`), versioned by the same kind of migrations (run by
// one replica at a time under an advisory lock), every row keyed by
// (replica, seq). A replica holds a session advisory lock on its name while
// it writes, so two gateways given the same `store.replica` cannot
// interleave one trail.
//
// Never holds the writer longer than a round trip's deadline (10 s; 5 s to
// connect; pg_connection.hpp). A lost or failed connection is dropped; the
// next call connects again, and a writer reads
// its replica's state (last written row, the trail's end) again first, since
// a commit whose answer was lost may have landed. The database need not be
// up when the gateway starts: rows wait in the journal.
#pragma once

#include <string>

#include "gateway/store/database.hpp"
#include "gateway/store/pg_connection.hpp"

namespace arbiter::store {

class PostgresStore final : public Database {
 public:
  // `conninfo`: a libpq connection string (a postgresql:// URL or key=value
  // pairs). Fails only when it cannot be parsed; the database itself is
  // tried here once and again at each call until reached.
  static std::expected<std::unique_ptr<PostgresStore>, std::string> open(std::string conninfo, std::string replica);
  // Releases the replica's lock before closing: the server frees a closed
  // connection's locks only once its backend has exited, and a successor
  // given the same name (a rolling restart) would be refused until then.
  ~PostgresStore() override;
  PostgresStore(const PostgresStore&) = delete;
  PostgresStore& operator=(const PostgresStore&) = delete;

  std::expected<void, std::string> write(const std::vector<std::pair<uint64_t, RowView>>& rows) override;
  uint64_t written() const override { return written_; }
  std::expected<std::vector<HourlyUsage>, std::string> hourly_usage_since(int64_t from_ms) override;
  std::expected<std::vector<AuditRow>, std::string> recent_audit(int limit) override;
  std::expected<Verdict, std::string> verify() override;
  std::expected<void, std::string> prune(int64_t before_ms) override;

 private:
  PostgresStore(std::string conninfo, std::string replica) : pg_(std::move(conninfo)), replica_(std::move(replica)) {}
  // Connected, the schema up to date.
  std::expected<void, std::string> connect();
  // Connected, holding this replica's lock, its state read.
  std::expected<void, std::string> connect_writer();
  std::expected<void, std::string> migrate();
  std::expected<void, std::string> load_state();

  PgConnection pg_;
  std::string replica_;
  bool migrated_ = false;
  // The connection (its generation) that holds the replica's lock and read its state.
  uint64_t writer_of_ = 0;
  uint64_t written_ = 0;
  int64_t last_batch_ = 0;
  std::string last_hash_{kChainStart};
};

}  // namespace arbiter::store
