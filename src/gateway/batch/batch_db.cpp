#include "gateway/batch/batch_db.hpp"

#include <sqlite3.h>

#include <cctype>

#include "gateway/store/database.hpp"
#include "gateway/store/pg_connection.hpp"
#include "gateway/store/sqlite_store.hpp"

namespace arbiter::batch {

namespace {

// The Batch API's tables, the same in both databases. A job's row holds its
// record (the API object and its tenant, core/batch/batch_job.hpp) and what
// replicas need of it: its status, which replica runs it and until when
// (its lease), and a cancel asked for on any replica.
constexpr const char* kTables[] = {
    "CREATE TABLE IF NOT EXISTS batch_files (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, filename TEXT NOT NULL,"
    " purpose TEXT NOT NULL, bytes BIGINT NOT NULL, created_at BIGINT NOT NULL, made_ns BIGINT NOT NULL,"
    " expires_at BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS batch_files_by_tenant ON batch_files (tenant, created_at, made_ns)",
    "CREATE INDEX IF NOT EXISTS batch_files_expiring ON batch_files (expires_at) WHERE expires_at > 0",
    "CREATE TABLE IF NOT EXISTS batch_jobs (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, created_at BIGINT NOT NULL,"
    " made_ns BIGINT NOT NULL, status TEXT NOT NULL, record TEXT NOT NULL, owner TEXT NOT NULL,"
    " lease_until BIGINT NOT NULL, cancel_at BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS batch_jobs_by_tenant ON batch_jobs (tenant, created_at, made_ns)",
    "CREATE INDEX IF NOT EXISTS batch_jobs_open ON batch_jobs (lease_until)"
    " WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling')",
};

class SqliteBatchDb final : public BatchDb {
 public:
  explicit SqliteBatchDb(sqlite3* db) : db_(db) {}
  ~SqliteBatchDb() override { sqlite3_close(db_); }

  std::expected<std::vector<Row>, std::string> query(const std::string& sql,
                                                     const std::vector<std::string>& params) override {
    // $1 is PostgreSQL's; ?1 the same parameter in SQLite.
    std::string text = sql;
    for (std::size_t i = 0; i + 1 < text.size(); ++i) {
      if (text[i] == '$' && std::isdigit(static_cast<unsigned char>(text[i + 1]))) text[i] = '?';
    }
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, text.c_str(), -1, &stmt, nullptr) != SQLITE_OK) return std::unexpected(error());
    for (std::size_t i = 0; i < params.size(); ++i) {
      sqlite3_bind_text(stmt, static_cast<int>(i + 1), params[i].data(), static_cast<int>(params[i].size()),
                        SQLITE_TRANSIENT);
    }
    std::vector<Row> rows;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      Row& row = rows.emplace_back();
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        const auto* value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
        row.emplace_back(value ? std::string(value, static_cast<std::size_t>(sqlite3_column_bytes(stmt, c)))
                               : std::string());
      }
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) return std::unexpected(error());
    return rows;
  }

 private:
  std::string error() const { return std::string("SQLite: ") + sqlite3_errmsg(db_); }
  sqlite3* db_;
};

class PostgresBatchDb final : public BatchDb {
 public:
  explicit PostgresBatchDb(std::string conninfo) : pg_(std::move(conninfo)) {}

  std::expected<std::vector<Row>, std::string> query(const std::string& sql,
                                                     const std::vector<std::string>& params) override {
    if (auto up = pg_.connect([this] { return make_tables(); }); !up) return std::unexpected(up.error());
    auto result = pg_.run(sql.c_str(), params);
    if (!result) return std::unexpected(result.error());
    std::vector<Row> rows(static_cast<std::size_t>(result->rows()));
    for (int r = 0; r < result->rows(); ++r) {
      for (int c = 0; c < result->columns(); ++c) rows[static_cast<std::size_t>(r)].push_back(result->text(r, c));
    }
    return rows;
  }

 private:
  // In the usage store's schema, under a lock of their own: replicas
  // starting together make each table once.
  std::expected<void, std::string> make_tables() {
    if (auto done = pg_.run_all({"BEGIN", "SELECT pg_advisory_xact_lock(7161132829718233602)",
                                 "CREATE SCHEMA IF NOT EXISTS arbiter", "SET search_path TO arbiter"});
        !done) {
      return done;
    }
    for (const char* sql : kTables) {
      if (auto done = pg_.run(sql); !done) return std::unexpected(done.error());
    }
    if (auto done = pg_.run("COMMIT"); !done) return std::unexpected(done.error());
    return {};
  }

  store::PgConnection pg_;
};

}  // namespace

std::expected<std::unique_ptr<BatchDb>, std::string> open_batch_db(const StoreConfig& store,
                                                                   const std::filesystem::path& batch_dir) {
  if (store.enabled) {
    auto url = store::postgres_url(store);
    if (!url) return std::unexpected(url.error());
    if (!url->empty()) return std::make_unique<PostgresBatchDb>(std::move(*url));
  }
  const std::string path = store.enabled ? store.path : (batch_dir / "batches.db").string();
  // A write waits out the usage store's batch (milliseconds) rather than fail.
  auto db = store::open_sqlite_file(path, 5'000);
  if (!db) return std::unexpected(db.error());
  auto opened = std::make_unique<SqliteBatchDb>(*db);
  for (const char* sql : kTables) {
    if (auto done = opened->query(sql, {}); !done) return std::unexpected(path + ": " + done.error());
  }
  return opened;
}

}  // namespace arbiter::batch
