// The usage and audit store in SQLite (docs/audit.md): one file in WAL
// mode, its schema versioned by migrations. Rows are written in batches,
// one transaction each, with the replica's last written sequence number in
// the same transaction, so a batch replayed from the journal after a crash
// is never written twice. A batch's audit rows are chained by hash
// (core/store/audit_chain.hpp).
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gateway/store/database.hpp"

struct sqlite3;

namespace arbiter::store {

// The SQLite file at `path` (made when missing) in WAL mode, a lock held by
// another connection waited for up to `busy_timeout_ms`. The Batch API's
// records share the store's file (gateway/batch/batch_db.hpp).
std::expected<sqlite3*, std::string> open_sqlite_file(const std::string& path, int busy_timeout_ms);

class SqliteStore final : public Database {
 public:
  // Opens (creating) the file and brings its schema up to date.
  static std::expected<std::unique_ptr<SqliteStore>, std::string> open(const std::string& path, std::string replica);
  ~SqliteStore();
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  std::expected<void, std::string> write(const std::vector<std::pair<uint64_t, RowView>>& rows) override;
  uint64_t written() const override { return written_; }
  std::expected<std::vector<HourlyUsage>, std::string> hourly_usage_since(int64_t from_ms) override;
  std::expected<std::vector<AuditRow>, std::string> recent_audit(int limit) override;
  std::expected<Verdict, std::string> verify() override;
  std::expected<void, std::string> prune(int64_t before_ms) override;

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
  std::string batch_text_;  // the last audit batch's JSON, its buffer handed to the next
};

}  // namespace arbiter::store
