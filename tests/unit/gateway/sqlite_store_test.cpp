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
