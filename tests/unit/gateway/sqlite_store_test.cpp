// The SQLite store on a real file: what every store does
// (support/store_contract.hpp). Also the journal: records written, kept
// across a reopen, released once written, refused past its bound, one
// process per folder.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include "gateway/store/journal.hpp"
#include "gateway/store/sqlite_store.hpp"
#include "support/store_contract.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::store {
namespace {

// A new connection to the test's file, as another process would open it.
test::StoreUnderTest sqlite_file(const std::string& path) {
  return {.open =
              [path](const std::string& replica) {
                auto db = SqliteStore::open(path, replica);
                EXPECT_TRUE(db) << db.error();
                return db ? std::unique_ptr<Database>(std::move(*db)) : nullptr;
              },
          .edit =
              [path](const std::string& sql) {
                sqlite3* db = nullptr;
                ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
                EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
                sqlite3_close(db);
              }};
}

TEST(SqliteStore, WritesOnceKeepsItsPlaceSumsByHourAndVerifies) {
  test::TempDir dir("sqlite-store");
  test::check_writes_once_keeps_its_place_sums_and_verifies(sqlite_file(dir.file("usage.db")));
}

TEST(SqliteStore, RetentionCutsAPrefixThatLeavesTheTrailVerifiable) {
  test::TempDir dir("sqlite-store");
  test::check_retention_cuts_a_prefix_that_leaves_the_trail_verifiable(sqlite_file(dir.file("usage.db")));
}

TEST(SqliteStore, ALargeBatchIsStoredRowForRow) {
  test::TempDir dir("sqlite-store");
  test::check_a_large_batch_is_stored_row_for_row(sqlite_file(dir.file("usage.db")));
}

// A store written by the schema before migration 2 (a row per decision in
// table `audit`) is moved into its batches at the first open: every row
// kept, the chain still verifying, the same SQL reading it.
TEST(SqliteStore, AStoreOfTheFirstSchemaIsMigratedWithItsTrailIntact) {
  test::TempDir dir("sqlite-store");
  const std::string path = dir.file("usage.db");
  const test::StoreUnderTest file = sqlite_file(path);
  const AuditRow one{.ts_ms = 5, .kind = "refused", .request_id = "r1", .tenant = "t", .klass = "chat",
                     .model = "m1", .detail = "stage=quota"};
  const AuditRow two{.ts_ms = 6, .kind = "dispatched", .request_id = "r2", .tenant = "t", .klass = "chat",
                     .model = "m1", .detail = "backend=b0 status=200"};
  const std::string h1 = batch_hash(kChainStart, {{1, one}});
  const std::string h2 = batch_hash(h1, {{2, two}, {3, one}});
  file.edit(
      "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_ms INTEGER);"
      "INSERT INTO schema_migrations VALUES (1, 0);"
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
      "CREATE TABLE replicas (replica TEXT PRIMARY KEY, written_seq INTEGER NOT NULL);"
      "INSERT INTO replicas VALUES ('gw-1', 3);"
      "INSERT INTO audit VALUES ('gw-1', 3, 5, 'refused', 'r1', 't', 'chat', 'm1', 'stage=quota', 2),"
      " ('gw-1', 1, 5, 'refused', 'r1', 't', 'chat', 'm1', 'stage=quota', 1),"
      " ('gw-1', 2, 6, 'dispatched', 'r2', 't', 'chat', 'm1', 'backend=b0 status=200', 2);"
      "INSERT INTO audit_batches VALUES ('gw-1', 1, 1, 1, 5, '" + std::string(kChainStart) + "', '" + h1 + "'),"
      " ('gw-1', 2, 2, 3, 6, '" + h1 + "', '" + h2 + "');");
  auto db = file.open("gw-1");
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(db->written(), 3u);
  auto verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->rows, 3);
  const auto recent = db->recent_audit(10);
  ASSERT_TRUE(recent) << recent.error();
  ASSERT_EQ(recent->size(), 3u);
  EXPECT_EQ((*recent)[1].detail, "backend=b0 status=200");  // seq 3, 2, 1
  // The chain goes on from the migrated batches.
  ASSERT_TRUE(db->write({{4, view_of(two)}}));
  verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->batches, 3);
}

TEST(Journal, KeepsRecordsAcrossAReopenReleasesThemAndHoldsItsBound) {
  test::TempDir dir("journal");
  const std::string path = dir.file("j");
  {
    auto journal = Journal::open(path, std::size_t{16} << 20);
    ASSERT_TRUE(journal) << journal.error();
    for (uint64_t seq = 1; seq <= 2'000; ++seq) ASSERT_TRUE((*journal)->append(seq, std::string(3'000, 'x')));
    EXPECT_GT((*journal)->bytes(), std::size_t{4} << 20);  // a second segment
    // Another process (here: another open) may not share it.
    EXPECT_FALSE(Journal::open(path, std::size_t{16} << 20));
  }
  auto journal = Journal::open(path, std::size_t{16} << 20);
  ASSERT_TRUE(journal) << journal.error();
  ASSERT_EQ((*journal)->recovered().size(), 2'000u);
  EXPECT_EQ((*journal)->recovered().front().first, 1u);
  EXPECT_EQ((*journal)->recovered().back().second.size(), 3'000u);
  (*journal)->release_through(2'000);
  EXPECT_EQ((*journal)->bytes(), 0u);  // nothing appended this run: every segment goes
  // The bound: 16 MiB of 4 MiB segments, then refused.
  uint64_t seq = 2'001;
  while ((*journal)->append(seq, std::string(3'000, 'y'))) ++seq;
  EXPECT_LE((*journal)->bytes(), std::size_t{16} << 20);
  EXPECT_GT(seq, 7'000u);
}

}  // namespace
}  // namespace arbiter::store
