#include "gateway/store/sqlite_store.hpp"

#include <sqlite3.h>
#include <sys/types.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/store/audit_json.hpp"

namespace arbiter::store {

namespace {

// Each migration once, in order; the applied ones are in schema_migrations.
constexpr const char* kSqliteMigrations[] = {
    // 1: usage, audit rows, audit batches, each replica's last written row.
    // Keyed by (replica, seq) WITHOUT ROWID: a row is one b-tree insert
    // (and usage's time index, for the start's sums and retention).
    "CREATE TABLE usage (replica TEXT NOT NULL, seq INTEGER NOT NULL, ts_ms INTEGER NOT NULL,"
    " request_id TEXT NOT NULL, tenant TEXT NOT NULL, team TEXT NOT NULL, model TEXT NOT NULL,"
    " class TEXT NOT NULL, status INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,"
    " completion_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, engine_ms REAL NOT NULL,"
    " cost REAL NOT NULL, tokens_from TEXT NOT NULL, PRIMARY KEY (replica, seq)) WITHOUT ROWID;"
    "CREATE INDEX usage_ts ON usage (ts_ms);"
    "CREATE TABLE audit (replica TEXT NOT NULL, seq INTEGER NOT NULL, ts_ms INTEGER NOT NULL, kind TEXT NOT NULL,"
    " request_id TEXT NOT NULL, tenant TEXT NOT NULL, class TEXT NOT NULL, model TEXT NOT NULL,"
    " detail TEXT NOT NULL, batch INTEGER NOT NULL, PRIMARY KEY (replica, seq)) WITHOUT ROWID;"
    "CREATE TABLE audit_batches (replica TEXT NOT NULL, batch INTEGER NOT NULL, count INTEGER NOT NULL,"
    " last_seq INTEGER NOT NULL, last_ts_ms INTEGER NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,"
    " PRIMARY KEY (replica, batch));"
    "CREATE TABLE replicas (replica TEXT PRIMARY KEY, written_seq INTEGER NOT NULL);",
    // 2: a batch's audit rows in the batch's own row, as one JSON array
    // (core/store/audit_json.hpp); `audit` becomes a view of them.
    "ALTER TABLE audit_batches ADD COLUMN rows TEXT NOT NULL DEFAULT '[]';"
    "ALTER TABLE audit_batches ADD COLUMN chain INTEGER NOT NULL DEFAULT 1;"  // store::ChainForm
    "UPDATE audit_batches SET rows = (SELECT json_group_array(json_array(seq, ts_ms, kind, request_id, tenant,"
    " class, model, detail)) FROM (SELECT * FROM audit a WHERE a.replica = audit_batches.replica"
    " AND a.batch = audit_batches.batch ORDER BY seq));"
    "DROP TABLE audit;"
    "CREATE VIEW audit AS SELECT b.replica AS replica, j.value ->> 0 AS seq, j.value ->> 1 AS ts_ms,"
    " j.value ->> 2 AS kind, j.value ->> 3 AS request_id, j.value ->> 4 AS tenant, j.value ->> 5 AS class,"
    " j.value ->> 6 AS model, j.value ->> 7 AS detail, b.batch AS batch FROM audit_batches b, json_each(b.rows) j;",
};

// A prepared statement, finalized at scope end.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { ok_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) == SQLITE_OK; }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return ok_; }
  // The text must outlast the statement's next step (SQLITE_STATIC: not copied).
  Statement& bind(int i, std::string_view s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
    return *this;
  }
  Statement& bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& bind_real(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  int step() { return sqlite3_step(stmt_); }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  bool ok_ = false;
};

// SQLite, run as root, hands the files it creates (the WAL, the shared
// memory) to the database's owner with fchown. The gateway's files are its
// own, and its systemd unit denies @privileged calls (fchown among them):
// the call is made a no-op.
int no_fchown(int, uid_t, gid_t) { return 0; }

// Usage rows go in kUsageChunk to a statement, the rest one at a time: a
// statement's execution (its start, its end, its reset) costs about half
// again what one row's b-tree work does (a 16-row statement: 17.8k -> 11.7k
// instructions a row).
constexpr int kUsageColumns = 15;
constexpr int kUsageChunk = 16;

std::string usage_insert(int rows) {
  std::string sql = "INSERT OR IGNORE INTO usage VALUES ";
  for (int r = 0; r < rows; ++r) {
    sql += r == 0 ? "(" : ",(";
    for (int c = 1; c <= kUsageColumns; ++c) {
      sql.append(c == 1 ? "?" : ",?").append(std::to_string(r * kUsageColumns + c));
    }
    sql += ')';
  }
  return sql;
}

}  // namespace

struct SqliteStore::Writes {
  explicit Writes(sqlite3* db)
      : usage(db, usage_insert(1).c_str()),
        usage_chunk(db, usage_insert(kUsageChunk).c_str()),
        batch(db, "INSERT INTO audit_batches VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
        mark(db, "INSERT INTO replicas VALUES (?1, ?2) ON CONFLICT (replica) DO UPDATE SET written_seq = ?2") {}
  bool ok() const { return usage.ok() && usage_chunk.ok() && batch.ok() && mark.ok(); }
  void reset() {
    for (Statement* s : {&usage, &usage_chunk, &batch, &mark}) s->reset();
  }
  Statement usage, usage_chunk, batch, mark;
  std::vector<std::pair<int64_t, const UsageView*>> pending;  // a write's usage rows, the buffer kept
};

SqliteStore::SqliteStore(sqlite3* db, std::string replica) : db_(db), replica_(std::move(replica)) {}

std::expected<sqlite3*, std::string> open_sqlite_file(const std::string& path, int busy_timeout_ms) {
  static const bool unowned = [] {
    // No allocation statistics (nothing reads them): with them on, every
    // allocation of SQLite's takes a global mutex, a tenth of a row's insert.
    // Must precede SQLite's initialization, which the lookup below performs.
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_vfs* vfs = sqlite3_vfs_find(nullptr);
    return vfs && vfs->xSetSystemCall &&
           vfs->xSetSystemCall(vfs, "fchown", reinterpret_cast<sqlite3_syscall_ptr>(&no_fchown)) == SQLITE_OK;
  }();
  (void)unowned;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return std::unexpected("cannot open " + path + ": " + why);
  }
  sqlite3_busy_timeout(db, busy_timeout_ms);
  // WAL: readers never block the writer; NORMAL: a commit survives a crash
  // of the process (the journal covers what a power loss may take).
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"}) {
    char* message = nullptr;
    if (sqlite3_exec(db, pragma, nullptr, nullptr, &message) != SQLITE_OK) {
      std::string why = path + ": " + (message ? message : sqlite3_errmsg(db));
      sqlite3_free(message);
      sqlite3_close(db);
      return std::unexpected(why);
    }
  }
  return db;
}

std::expected<std::unique_ptr<SqliteStore>, std::string> SqliteStore::open(const std::string& path,
                                                                            std::string replica) {
  // A locked database (another process's transaction, or this one's Batch
  // API records) fails a write quickly: the writer keeps the rows and retries.
  auto db = open_sqlite_file(path, 200);
  if (!db) return std::unexpected(db.error());
  std::unique_ptr<SqliteStore> store(new SqliteStore(*db, std::move(replica)));
  if (auto done = store->migrate(); !done) return std::unexpected(path + ": " + done.error());
  if (auto done = store->load_state(); !done) return std::unexpected(path + ": " + done.error());
  store->writes_ = std::make_unique<Writes>(*db);
  if (!store->writes_->ok()) return std::unexpected(path + ": " + store->error());
  return store;
}

SqliteStore::~SqliteStore() {
  writes_.reset();  // finalized before the close
  sqlite3_close(db_);
}

std::string SqliteStore::error() const { return sqlite3_errmsg(db_); }

std::expected<void, std::string> SqliteStore::exec(const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) == SQLITE_OK) return {};
  std::string why = message ? message : error();
  sqlite3_free(message);
  return std::unexpected(why);
}

std::expected<void, std::string> SqliteStore::migrate() {
  if (auto done = exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_ms INTEGER)");
      !done) {
    return done;
  }
  int64_t have = 0;
  {
    // Finalized before the migrations run: a statement still reading would
    // hold the schema (DROP TABLE: "database table is locked").
    Statement applied(db_, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    if (!applied.ok() || applied.step() != SQLITE_ROW) return std::unexpected(error());
    have = applied.i64(0);
  }
  constexpr auto kCount = static_cast<int64_t>(std::size(kSqliteMigrations));
  if (have > kCount) {
    return std::unexpected("its schema is version " + std::to_string(have) + ", newer than this gateway's " +
                           std::to_string(kCount));
  }
  for (int64_t v = have + 1; v <= kCount; ++v) {
    if (auto done = exec("BEGIN IMMEDIATE"); !done) return done;
    auto done = exec(kSqliteMigrations[v - 1]);
    Statement record(db_, "INSERT INTO schema_migrations VALUES (?, CAST(strftime('%s','now') AS INTEGER) * 1000)");
    if (done && (!record.ok() || record.bind(1, v).step() != SQLITE_DONE)) done = std::unexpected(error());
    if (!done) {
      (void)exec("ROLLBACK");
      return std::unexpected("migration " + std::to_string(v) + ": " + done.error());
    }
    if (auto committed = exec("COMMIT"); !committed) return committed;
  }
  return {};
}

std::expected<void, std::string> SqliteStore::load_state() {
  Statement written(db_, "SELECT written_seq FROM replicas WHERE replica = ?");
  if (!written.ok()) return std::unexpected(error());
  if (written.bind(1, replica_).step() == SQLITE_ROW) written_ = static_cast<uint64_t>(written.i64(0));
  Statement last(db_, "SELECT batch, hash FROM audit_batches WHERE replica = ? ORDER BY batch DESC LIMIT 1");
  if (!last.ok()) return std::unexpected(error());
  if (last.bind(1, replica_).step() == SQLITE_ROW) {
    last_batch_ = last.i64(0);
    last_hash_ = last.text(1);
  }
  return {};
}

std::expected<void, std::string> SqliteStore::write(const std::vector<std::pair<uint64_t, RowView>>& rows) {
  if (rows.empty() || rows.back().first <= written_) return {};
  if (auto done = exec("BEGIN IMMEDIATE"); !done) return done;
  auto fail = [&]() -> std::expected<void, std::string> {
    std::string why = error();
    writes_->reset();
    (void)exec("ROLLBACK");
    return std::unexpected(why);
  };
  AuditBatchBuilder audit(last_hash_, rows.size(), std::move(batch_text_));
  const int64_t batch = last_batch_ + 1;
  auto& usage_rows = writes_->pending;
  usage_rows.clear();
  for (const auto& [seq, row] : rows) {
    if (seq <= written_) continue;  // already here (a replay): not written, nor chained, twice
    const auto s = static_cast<int64_t>(seq);
    if (const auto* u = std::get_if<UsageView>(&row)) {
      usage_rows.emplace_back(s, u);
    } else {
      audit.add(s, std::get<AuditView>(row));
    }
  }
  // Row `r` of `statement`'s values.
  auto bind_usage = [&](Statement& statement, int r, int64_t s, const UsageView& u) {
    const int k = r * kUsageColumns;
    statement.bind(k + 1, replica_).bind(k + 2, s).bind(k + 3, u.ts_ms).bind(k + 4, u.request_id);
    statement.bind(k + 5, u.tenant).bind(k + 6, u.team).bind(k + 7, u.model).bind(k + 8, u.klass);
    statement.bind(k + 9, u.status).bind(k + 10, u.prompt_tokens).bind(k + 11, u.completion_tokens);
    statement.bind(k + 12, u.cached_tokens).bind_real(k + 13, u.engine_ms).bind_real(k + 14, u.cost);
    statement.bind(k + 15, u.tokens_from);
  };
  for (std::size_t next = 0; next < usage_rows.size();) {
    const bool whole_chunk = usage_rows.size() - next >= static_cast<std::size_t>(kUsageChunk);
    const int n = whole_chunk ? kUsageChunk : 1;
    Statement& insert = whole_chunk ? writes_->usage_chunk : writes_->usage;
    for (int r = 0; r < n; ++r, ++next) bind_usage(insert, r, usage_rows[next].first, *usage_rows[next].second);
    if (insert.step() != SQLITE_DONE) return fail();
    insert.reset();
  }
  std::string hash;
  if (audit.count() > 0) {
    AuditBatchBuilder::Batch chained = audit.finish();
    hash = std::move(chained.hash);
    Statement& record = writes_->batch;
    record.bind(1, replica_).bind(2, batch).bind(3, audit.count()).bind(4, audit.last_seq()).bind(5, audit.last_ts());
    record.bind(6, last_hash_).bind(7, hash).bind(8, chained.json).bind(9, static_cast<int64_t>(ChainForm::kJson));
    if (record.step() != SQLITE_DONE) return fail();
    record.reset();
    batch_text_ = std::move(chained.json);
  }
  Statement& mark = writes_->mark;
  if (mark.bind(1, replica_).bind(2, static_cast<int64_t>(rows.back().first)).step() != SQLITE_DONE) return fail();
  mark.reset();
  if (auto done = exec("COMMIT"); !done) {
    (void)exec("ROLLBACK");
    return done;
  }
  written_ = rows.back().first;
  if (!hash.empty()) {
    last_batch_ = batch;
    last_hash_ = std::move(hash);
  }
  return {};
}

std::expected<std::vector<HourlyUsage>, std::string> SqliteStore::hourly_usage_since(int64_t from_ms) {
  Statement q(db_,
              "SELECT ts_ms / 3600000 * 3600000 AS hour, tenant, team, model, class, COUNT(*), SUM(prompt_tokens),"
              " SUM(completion_tokens), SUM(cached_tokens), SUM(cost) FROM usage WHERE ts_ms >= ?"
              " GROUP BY hour, tenant, team, model, class ORDER BY hour");
  if (!q.ok()) return std::unexpected(error());
  q.bind(1, from_ms);
  std::vector<HourlyUsage> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    out.push_back({.hour_ms = q.i64(0),
                   .tenant = q.text(1),
                   .team = q.text(2),
                   .model = q.text(3),
                   .klass = q.text(4),
                   .requests = static_cast<uint64_t>(q.i64(5)),
                   .prompt_tokens = static_cast<uint64_t>(q.i64(6)),
                   .completion_tokens = static_cast<uint64_t>(q.i64(7)),
                   .cached_tokens = static_cast<uint64_t>(q.i64(8)),
                   .cost = q.real(9)});
  }
  if (rc != SQLITE_DONE) return std::unexpected(error());
  return out;
}

std::expected<std::vector<AuditRow>, std::string> SqliteStore::recent_audit(int limit) {
  // The newest batches, until they hold `limit` rows.
  Statement q(db_, "SELECT rows FROM audit_batches WHERE replica = ? ORDER BY batch DESC");
  if (!q.ok()) return std::unexpected(error());
  q.bind(1, replica_);
  std::vector<AuditRow> out;
  const auto want = static_cast<std::size_t>(std::max(limit, 0));
  int rc = SQLITE_DONE;
  while (out.size() < want && (rc = q.step()) == SQLITE_ROW) append_newest(q.text(0), want, out);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return std::unexpected(error());
  return out;
}

std::expected<Verdict, std::string> SqliteStore::verify() {
  TrailCheck check;
  Statement batches(db_,
                    "SELECT replica, batch, count, prev_hash, hash, rows, chain FROM audit_batches"
                    " ORDER BY replica, batch");
  if (!batches.ok()) return std::unexpected(error());
  int rc;
  while ((rc = batches.step()) == SQLITE_ROW) {
    check.add_batch(batches.text(0),
                    {.batch = batches.i64(1), .count = batches.i64(2), .prev_hash = batches.text(3),
                     .hash = batches.text(4), .rows = {}, .form = static_cast<ChainForm>(batches.i64(6)), .json = {}},
                    batches.text(5));
  }
  if (rc != SQLITE_DONE) return std::unexpected(error());
  return check.verdict();
}

std::expected<void, std::string> SqliteStore::prune(int64_t before_ms) {
  if (auto done = exec("BEGIN IMMEDIATE"); !done) return done;
  auto fail = [&]() -> std::expected<void, std::string> {
    std::string why = error();
    (void)exec("ROLLBACK");
    return std::unexpected(why);
  };
  Statement usage(db_, "DELETE FROM usage WHERE ts_ms < ?");
  if (!usage.ok() || usage.bind(1, before_ms).step() != SQLITE_DONE) return fail();
  // Per replica, the batches up to its newest one that ended before the
  // cut, their rows with them: the trail loses a prefix, so what stays
  // verifies.
  Statement cut(db_, "SELECT replica, MAX(batch) FROM audit_batches WHERE last_ts_ms < ? GROUP BY replica");
  if (!cut.ok()) return fail();
  cut.bind(1, before_ms);
  std::vector<std::pair<std::string, int64_t>> cuts;
  int rc;
  while ((rc = cut.step()) == SQLITE_ROW) cuts.emplace_back(cut.text(0), cut.i64(1));
  if (rc != SQLITE_DONE) return fail();
  for (const auto& [replica, batch] : cuts) {
    Statement batches(db_, "DELETE FROM audit_batches WHERE replica = ? AND batch <= ?");
    if (!batches.ok() || batches.bind(1, replica).bind(2, batch).step() != SQLITE_DONE) return fail();
  }
  return exec("COMMIT");
}

}  // namespace arbiter::store
