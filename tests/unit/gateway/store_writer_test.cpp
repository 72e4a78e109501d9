// The store writer's spool count: a row leaves arbiter_store_spool_rows only
// once the store holds it, so a reader that sees 0 may count on every row
// being there (the drain an operator, or a test, waits for after an outage).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <string>
#include <thread>

#include "gateway/store/store_writer.hpp"
#include "support/temp_dir.hpp"

namespace arbiter {
namespace {

int64_t count_usage_rows(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  int64_t n = -1;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM usage", -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    n = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

TEST(StoreWriter, ABatchBeingWrittenStaysInTheSpoolCountUntilTheStoreHoldsIt) {
  test::TempDir dir("store-writer");
  StoreConfig settings;
  settings.path = dir.file("usage.db");
  auto opened = StoreWriter::open(settings);
  ASSERT_TRUE(opened) << opened.error();
  StoreWriter& writer = **opened;
  constexpr int kRows = 1'000;
  // Stamped now: rows older than the retention would be pruned by the
  // writer's first pass after a write.
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  for (int i = 0; i < kRows; ++i) {
    writer.add(store::UsageRow{.ts_ms = now_ms + i, .request_id = "r" + std::to_string(i), .tenant = "t",
                               .model = "m", .klass = "chat", .status = 200});
  }
  // Another connection holds the write lock: each of the writer's batches
  // waits out SQLite's busy timeout with its rows taken from the queue,
  // then fails. All the while none of them is in the store.
  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open(settings.path.c_str(), &locker), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  writer.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int samples = 0;
  while (writer.state().failures < 3 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(writer.state().spool_rows, static_cast<uint64_t>(kRows)) << "sample " << samples;
    ++samples;
  }
  ASSERT_GE(writer.state().failures, 3u);
  ASSERT_EQ(sqlite3_exec(locker, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(locker);
  // Once the count reads 0 the rows are all there.
  while (writer.state().spool_rows > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(writer.state().spool_rows, 0u);
  EXPECT_EQ(count_usage_rows(settings.path), kRows);
  EXPECT_EQ(writer.state().usage_written, static_cast<uint64_t>(kRows));
}

}  // namespace
}  // namespace arbiter
