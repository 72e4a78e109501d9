#include "gateway/store/postgres_store.hpp"

#include <cmath>
#include <cstdio>

#include "core/store/audit_json.hpp"
#include "core/store/clean_text.hpp"

namespace arbiter::store {

namespace {

// Each migration once, in order, in the `arbiter` schema; the applied ones
// are in schema_migrations. The SQLite store's tables, PostgreSQL's types.
constexpr const char* kPostgresMigrations[] = {
    // 1: usage, audit rows, audit batches, each replica's last written row.
    "CREATE TABLE usage (replica TEXT NOT NULL, seq BIGINT NOT NULL, ts_ms BIGINT NOT NULL,"
    " request_id TEXT NOT NULL, tenant TEXT NOT NULL, team TEXT NOT NULL, model TEXT NOT NULL,"
    " class TEXT NOT NULL, status BIGINT NOT NULL, prompt_tokens BIGINT NOT NULL,"
    " completion_tokens BIGINT NOT NULL, cached_tokens BIGINT NOT NULL, engine_ms DOUBLE PRECISION NOT NULL,"
    " cost DOUBLE PRECISION NOT NULL, tokens_from TEXT NOT NULL, PRIMARY KEY (replica, seq));"
    "CREATE INDEX usage_ts ON usage (ts_ms);"
    "CREATE TABLE audit (replica TEXT NOT NULL, seq BIGINT NOT NULL, ts_ms BIGINT NOT NULL, kind TEXT NOT NULL,"
    " request_id TEXT NOT NULL, tenant TEXT NOT NULL, class TEXT NOT NULL, model TEXT NOT NULL,"
    " detail TEXT NOT NULL, batch BIGINT NOT NULL, PRIMARY KEY (replica, seq));"
    "CREATE TABLE audit_batches (replica TEXT NOT NULL, batch BIGINT NOT NULL, count BIGINT NOT NULL,"
    " last_seq BIGINT NOT NULL, last_ts_ms BIGINT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,"
    " PRIMARY KEY (replica, batch));"
    "CREATE TABLE replicas (replica TEXT PRIMARY KEY, written_seq BIGINT NOT NULL);",
    // 2: a batch's audit rows in the batch's own row, as one JSON array
    // (core/store/audit_json.hpp; text: the bytes as written); `audit`
    // becomes a view of them.
    "ALTER TABLE audit_batches ADD COLUMN rows TEXT NOT NULL DEFAULT '[]';"
    "ALTER TABLE audit_batches ADD COLUMN chain BIGINT NOT NULL DEFAULT 1;"  // store::ChainForm
    "UPDATE audit_batches b SET rows = COALESCE((SELECT json_agg(json_build_array(a.seq, a.ts_ms, a.kind,"
    " a.request_id, a.tenant, a.class, a.model, a.detail) ORDER BY a.seq)::text FROM audit a"
    " WHERE a.replica = b.replica AND a.batch = b.batch), '[]');"
    "DROP TABLE audit;"
    "CREATE VIEW audit AS SELECT b.replica, (j ->> 0)::bigint AS seq, (j ->> 1)::bigint AS ts_ms, j ->> 2 AS kind,"
    " j ->> 3 AS request_id, j ->> 4 AS tenant, j ->> 5 AS class, j ->> 6 AS model, j ->> 7 AS detail, b.batch"
    " FROM audit_batches b, jsonb_array_elements(b.rows::jsonb) AS j;",
};

// A replica's writer lock, a session lock keyed by its name.
constexpr const char* kLockReplica = "SELECT pg_try_advisory_lock(hashtextextended('arbiter replica ' || $1, 0))";
constexpr const char* kUnlockReplica = "SELECT pg_advisory_unlock(hashtextextended('arbiter replica ' || $1, 0))";

// A batch's usage rows go as one array per column (one statement, whatever
// the batch's size): unnest turns them back into rows.
constexpr const char* kInsertUsage =
    "INSERT INTO usage SELECT $1::text, * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[],"
    " $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[],"
    " $13::float8[], $14::float8[], $15::text[]) ON CONFLICT DO NOTHING";
// One column of a batch as a PostgreSQL array literal: every text element
// quoted and escaped, and made valid UTF-8 without NULs (clean_text.hpp).
class ArrayText {
 public:
  ArrayText() : text_("{") {}
  void add(std::string_view s) {
    comma();
    if (is_clean_text(s)) {
      quote(s);
    } else {
      quote(clean_text(s));
    }
  }
  void add(int64_t n) {
    comma();
    text_ += std::to_string(n);
  }
  void add_real(double x) {
    comma();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", std::isfinite(x) ? x : 0.0);
    text_ += buf;
  }
  std::string done() { return std::move(text_) + "}"; }

 private:
  void comma() {
    if (text_.size() > 1) text_ += ',';
  }
  void quote(std::string_view s) {
    text_ += '"';
    for (const char c : s) {
      if (c == '"' || c == '\\') text_ += '\\';
      text_ += c;
    }
    text_ += '"';
  }
  std::string text_;
};

}  // namespace

std::expected<std::unique_ptr<PostgresStore>, std::string> PostgresStore::open(std::string conninfo,
                                                                                std::string replica) {
  if (auto why = PgConnection::conninfo_error(conninfo, /*allow_password=*/true)) {
    return std::unexpected("the PostgreSQL connection string: " + *why);
  }
  std::unique_ptr<PostgresStore> store(new PostgresStore(std::move(conninfo), std::move(replica)));
  (void)store->connect_writer();  // unreached: its rows wait in the journal, and it is tried again
  return store;
}

PostgresStore::~PostgresStore() {
  if (writer_of_ == pg_.generation() && pg_.up()) (void)pg_.run(kUnlockReplica, {replica_});
}

std::expected<void, std::string> PostgresStore::connect() {
  return pg_.connect([this]() -> std::expected<void, std::string> {
    if (auto done = pg_.run("SET search_path TO arbiter"); !done) return std::unexpected(done.error());
    if (!migrated_) {
      if (auto done = migrate(); !done) return done;
      migrated_ = true;
    }
    return {};
  });
}

std::expected<void, std::string> PostgresStore::connect_writer() {
  if (writer_of_ == pg_.generation() && pg_.up()) return {};
  if (auto done = connect(); !done) return done;
  // Held for the connection's life: the server lets it go when the
  // connection ends (this gateway's exit or crash included).
  auto locked = pg_.run(kLockReplica, {replica_});
  if (!locked) return std::unexpected(locked.error());
  if (locked->rows() != 1 || locked->text(0, 0) != "t") {
    // What the holder has written so far (after a crash of this gateway,
    // all it will write): a start's replay skips it. The lock is tried
    // again at the next call.
    (void)load_state();
    return std::unexpected("PostgreSQL: replica " + replica_ +
                           " is being written by another gateway's connection (give each replica its own "
                           "store.replica), or by one of this gateway's that the server has not yet seen end");
  }
  if (auto done = load_state(); !done) return done;
  writer_of_ = pg_.generation();
  return {};
}

std::expected<void, std::string> PostgresStore::migrate() {
  // In one transaction under a lock of their own (its key: "arbiter" and a
  // 1): replicas starting together apply each migration once, and a failed
  // one leaves nothing half done.
  if (auto done = pg_.run_all({"BEGIN", "SELECT pg_advisory_xact_lock(7161132829718233601)",
                           "CREATE SCHEMA IF NOT EXISTS arbiter",
                           "CREATE TABLE IF NOT EXISTS arbiter.schema_migrations (version BIGINT PRIMARY KEY,"
                           " applied_ms BIGINT NOT NULL)"});
      !done) {
    return done;
  }
  auto applied = pg_.run("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  if (!applied) return std::unexpected(applied.error());
  const int64_t have = applied->i64(0, 0);
  constexpr auto kCount = static_cast<int64_t>(std::size(kPostgresMigrations));
  if (have > kCount) {
    pg_.drop();
    return std::unexpected("PostgreSQL: its schema is version " + std::to_string(have) + ", newer than this gateway's " +
                           std::to_string(kCount));
  }
  for (int64_t v = have + 1; v <= kCount; ++v) {
    if (auto done = pg_.run(kPostgresMigrations[v - 1]); !done) {
      return std::unexpected("migration " + std::to_string(v) + ": " + done.error());
    }
    if (auto done = pg_.run("INSERT INTO schema_migrations VALUES ($1, (extract(epoch FROM now()) * 1000)::bigint)",
                        {std::to_string(v)});
        !done) {
      return std::unexpected(done.error());
    }
  }
  if (auto done = pg_.run("COMMIT"); !done) return std::unexpected(done.error());
  return {};
}

std::expected<void, std::string> PostgresStore::load_state() {
  auto written = pg_.run("SELECT written_seq FROM replicas WHERE replica = $1", {replica_});
  if (!written) return std::unexpected(written.error());
  written_ = written->rows() == 1 ? static_cast<uint64_t>(written->i64(0, 0)) : 0;
  auto last = pg_.run("SELECT batch, hash FROM audit_batches WHERE replica = $1 ORDER BY batch DESC LIMIT 1", {replica_});
  if (!last) return std::unexpected(last.error());
  last_batch_ = last->rows() == 1 ? last->i64(0, 0) : 0;
  last_hash_ = last->rows() == 1 ? last->text(0, 1) : std::string(kChainStart);
  return {};
}

std::expected<void, std::string> PostgresStore::write(const std::vector<std::pair<uint64_t, RowView>>& rows) {
  if (rows.empty()) return {};
  if (auto ready = connect_writer(); !ready) return ready;
  if (rows.back().first <= written_) return {};
  ArrayText u[14];
  std::size_t usage_rows = 0;
  AuditBatchBuilder audit(last_hash_, rows.size());
  for (const auto& [seq, row] : rows) {
    if (seq <= written_) continue;  // already there (a replay)
    const auto s = static_cast<int64_t>(seq);
    if (const auto* v = std::get_if<UsageView>(&row)) {
      const std::string_view texts[] = {v->request_id, v->tenant, v->team, v->model, v->klass};
      u[0].add(s);
      u[1].add(v->ts_ms);
      for (std::size_t i = 0; i < std::size(texts); ++i) u[2 + i].add(texts[i]);
      const int64_t counts[] = {v->status, v->prompt_tokens, v->completion_tokens, v->cached_tokens};
      for (std::size_t i = 0; i < std::size(counts); ++i) u[7 + i].add(counts[i]);
      u[11].add_real(v->engine_ms);
      u[12].add_real(v->cost);
      u[13].add(v->tokens_from);
      ++usage_rows;
    } else {
      audit.add(s, std::get<AuditView>(row));
    }
  }
  const int64_t batch = last_batch_ + 1;
  std::string hash;
  // Any failure drops the connection (run), the transaction with it.
  if (auto done = pg_.run("BEGIN"); !done) return std::unexpected(done.error());
  if (usage_rows > 0) {
    std::vector<std::string> params{replica_};
    for (ArrayText& column : u) params.push_back(column.done());
    if (auto done = pg_.run(kInsertUsage, params); !done) return std::unexpected(done.error());
  }
  if (audit.count() > 0) {
    AuditBatchBuilder::Batch chained = audit.finish();
    hash = chained.hash;
    auto done = pg_.run("INSERT INTO audit_batches VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    {replica_, std::to_string(batch), std::to_string(audit.count()), std::to_string(audit.last_seq()),
                     std::to_string(audit.last_ts()), last_hash_, hash, std::move(chained.json),
                     std::to_string(static_cast<int64_t>(ChainForm::kJson))});
    if (!done) return std::unexpected(done.error());
  }
  auto marked = pg_.run("INSERT INTO replicas VALUES ($1, $2) ON CONFLICT (replica) DO UPDATE"
                    " SET written_seq = EXCLUDED.written_seq",
                    {replica_, std::to_string(rows.back().first)});
  if (!marked) return std::unexpected(marked.error());
  if (auto done = pg_.run("COMMIT"); !done) return std::unexpected(done.error());
  written_ = rows.back().first;
  if (!hash.empty()) {
    last_batch_ = batch;
    last_hash_ = std::move(hash);
  }
  return {};
}

std::expected<std::vector<HourlyUsage>, std::string> PostgresStore::hourly_usage_since(int64_t from_ms) {
  if (auto ready = connect(); !ready) return std::unexpected(ready.error());
  auto q = pg_.run(
      "SELECT ts_ms / 3600000 * 3600000 AS hour, tenant, team, model, class, COUNT(*), SUM(prompt_tokens),"
      " SUM(completion_tokens), SUM(cached_tokens), SUM(cost) FROM usage WHERE ts_ms >= $1"
      " GROUP BY hour, tenant, team, model, class ORDER BY hour",
      {std::to_string(from_ms)});
  if (!q) return std::unexpected(q.error());
  std::vector<HourlyUsage> out;
  out.reserve(static_cast<std::size_t>(q->rows()));
  for (int i = 0; i < q->rows(); ++i) {
    out.push_back({.hour_ms = q->i64(i, 0),
                   .tenant = q->text(i, 1),
                   .team = q->text(i, 2),
                   .model = q->text(i, 3),
                   .klass = q->text(i, 4),
                   .requests = static_cast<uint64_t>(q->i64(i, 5)),
                   .prompt_tokens = static_cast<uint64_t>(q->i64(i, 6)),
                   .completion_tokens = static_cast<uint64_t>(q->i64(i, 7)),
                   .cached_tokens = static_cast<uint64_t>(q->i64(i, 8)),
                   .cost = q->real(i, 9)});
  }
  return out;
}

std::expected<std::vector<AuditRow>, std::string> PostgresStore::recent_audit(int limit) {
  if (auto ready = connect(); !ready) return std::unexpected(ready.error());
  // The newest batches that hold `limit` rows: those whose later batches
  // hold fewer.
  auto q = pg_.run(
      "SELECT rows FROM (SELECT rows, batch, SUM(count) OVER (ORDER BY batch DESC) - count AS after"
      " FROM audit_batches WHERE replica = $1) newest WHERE after < $2 ORDER BY batch DESC",
      {replica_, std::to_string(limit)});
  if (!q) return std::unexpected(q.error());
  std::vector<AuditRow> out;
  const auto want = static_cast<std::size_t>(std::max(limit, 0));
  for (int i = 0; i < q->rows() && out.size() < want; ++i) append_newest(q->text(i, 0), want, out);
  return out;
}

std::expected<Verdict, std::string> PostgresStore::verify() {
  if (auto ready = connect(); !ready) return std::unexpected(ready.error());
  // Through a cursor, a few batches a round trip: the trail is checked in
  // the memory of a few batches, however long it is.
  if (auto done = pg_.run_all({"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                           "DECLARE trail NO SCROLL CURSOR FOR SELECT replica, batch, count, prev_hash, hash, rows,"
                           " chain FROM audit_batches ORDER BY replica, batch"});
      !done) {
    return std::unexpected(done.error());
  }
  TrailCheck check;
  for (;;) {
    auto batches = pg_.run("FETCH 16 FROM trail");
    if (!batches) return std::unexpected(batches.error());
    if (batches->rows() == 0) break;
    for (int i = 0; i < batches->rows(); ++i) {
      check.add_batch(batches->text(i, 0),
                      {.batch = batches->i64(i, 1), .count = batches->i64(i, 2), .prev_hash = batches->text(i, 3),
                       .hash = batches->text(i, 4), .rows = {}, .form = static_cast<ChainForm>(batches->i64(i, 6)),
                       .json = {}},
                      batches->text(i, 5));
    }
  }
  if (auto done = pg_.run("COMMIT"); !done) return std::unexpected(done.error());
  return check.verdict();
}

std::expected<void, std::string> PostgresStore::prune(int64_t before_ms) {
  if (auto ready = connect(); !ready) return ready;
  const std::string cut = std::to_string(before_ms);
  // Per replica, the batches up to its newest one that ended before the
  // cut, their rows with them: each trail loses a prefix, so what stays
  // verifies.
  if (auto done = pg_.run("BEGIN"); !done) return std::unexpected(done.error());
  if (auto done = pg_.run("DELETE FROM usage WHERE ts_ms < $1", {cut}); !done) return std::unexpected(done.error());
  auto done = pg_.run(
      "WITH cut AS (SELECT replica, MAX(batch) AS batch FROM audit_batches WHERE last_ts_ms < $1 GROUP BY replica)"
      " DELETE FROM audit_batches USING cut WHERE audit_batches.replica = cut.replica"
      " AND audit_batches.batch <= cut.batch",
      {cut});
  if (!done) return std::unexpected(done.error());
  if (auto committed = pg_.run("COMMIT"); !committed) return std::unexpected(committed.error());
  return {};
}

}  // namespace arbiter::store
