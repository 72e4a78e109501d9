// The usage and audit store in SQLite (docs/audit.md): one file in WAL
// mode, its schema versioned by migrations. Rows are written in batches,
// one transaction each, with the replica's last written sequence number in
// the same transaction, so a batch replayed from the journal after a crash
// is never written twice. A batch's audit rows are chained by hash
// (core/store/audit_chain.hpp). Not thread-safe: the store writer's thread
// owns it (admin reads go through the writer's lock).
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/store/audit_chain.hpp"
#include "core/store/store_rows.hpp"

struct sqlite3;

namespace arbiter::store {

// Usage added up per hour and (tenant, team, model, class): what the usage
// ledger is seeded with at a start.
struct HourlyUsage {
  int64_t hour_ms = 0;  // the hour's start, unix milliseconds
  std::string tenant, team, model, klass;
  uint64_t requests = 0, prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  double cost = 0;
};

class SqliteStore {
 public:
  // Opens (creating) the file and brings its schema up to date.
  static std::expected<std::unique_ptr<SqliteStore>, std::string> open(const std::string& path, std::string replica);
  ~SqliteStore();
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // The rows, each with its sequence number (ascending), in one
  // transaction; the audit rows among them as one chained batch. The
  // views need only last the call.
  std::expected<void, std::string> write(const std::vector<std::pair<uint64_t, RowView>>& rows);
  // The last sequence number written for this replica (0: none).
  uint64_t written() const { return written_; }

  std::expected<std::vector<HourlyUsage>, std::string> hourly_usage_since(int64_t from_ms);
  // This replica's newest `limit` audit rows, newest first.
  std::expected<std::vector<AuditRow>, std::string> recent_audit(int limit);
  // Every batch of this store's trail, per replica, checked.
  std::expected<Verdict, std::string> verify();
  // Usage rows and whole audit batches older than `before_ms` go.
  std::expected<void, std::string> prune(int64_t before_ms);

 private:
  SqliteStore(sqlite3* db, std::string replica);
  std::expected<void, std::string> migrate();
  std::expected<void, std::string> load_state();
  std::expected<void, std::string> exec(const char* sql);
  std::string error() const;

  sqlite3* db_;
  struct Writes;                    // the write's statements, prepared once
  std::unique_ptr<Writes> writes_;  // after the schema is there
  std::string replica_;
  uint64_t written_ = 0;
  int64_t last_batch_ = 0;
  std::string last_hash_{kChainStart};
};

}  // namespace arbiter::store
