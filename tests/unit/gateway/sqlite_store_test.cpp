// The SQLite store on a real file: rows written once (a replayed batch is
// ignored), the last written sequence number and the trail's end kept
// across a reopen, hourly sums for the ledger, the newest audit rows, an
// edit found by verify, and retention cutting a prefix the rest of which
// still verifies. Also the journal: records written, kept across a reopen,
// released once written, refused past its bound, one process per folder.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include "gateway/store/journal.hpp"
#include "gateway/store/sqlite_store.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::store {
namespace {

constexpr int64_t kHour = 3'600'000;
constexpr int64_t kT0 = 1'796'600'000'000 / kHour * kHour;

UsageView usage(int64_t ts, std::string_view tenant) {
  return {.ts_ms = ts, .request_id = "r", .tenant = tenant, .team = "ml", .model = "m1", .klass = "chat",
          .status = 200, .prompt_tokens = 10, .completion_tokens = 5, .cached_tokens = 2, .engine_ms = 1.5,
          .cost = 0.25, .tokens_from = "engine"};
}

AuditView audit(int64_t ts, std::string_view detail) {
  return {.ts_ms = ts, .kind = "dispatched", .request_id = "r", .tenant = "t", .klass = "chat", .model = "m1",
          .detail = detail};
}

void exec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(SqliteStore, WritesOnceKeepsItsPlaceSumsByHourAndVerifies) {
  test::TempDir dir("sqlite-store");
  const std::string path = dir.file("usage.db");
  {
    auto db = SqliteStore::open(path, "gw-1");
    ASSERT_TRUE(db) << db.error();
    std::vector<std::pair<uint64_t, RowView>> rows{{1, usage(kT0 + 10, "a")}, {2, audit(kT0 + 10, "one")},
                                                   {3, usage(kT0 + kHour + 5, "a")}, {4, usage(kT0 + 20, "b")}};
    ASSERT_TRUE((*db)->write(rows));
    ASSERT_TRUE((*db)->write(rows));  // replayed: ignored, no error
    EXPECT_EQ((*db)->written(), 4u);
    ASSERT_TRUE((*db)->write({{5, audit(kT0 + 30, "two")}, {6, audit(kT0 + 40, "three")}}));
  }
  auto db = SqliteStore::open(path, "gw-1");
  ASSERT_TRUE(db) << db.error();
  EXPECT_EQ((*db)->written(), 6u);
  const auto hours = (*db)->hourly_usage_since(kT0);
  ASSERT_TRUE(hours);
  ASSERT_EQ(hours->size(), 3u);  // (hour 0, a), (hour 0, b), (hour 1, a)
  uint64_t requests = 0, tokens = 0;
  for (const HourlyUsage& h : *hours) {
    requests += h.requests;
    tokens += h.prompt_tokens + h.completion_tokens;
    EXPECT_EQ(h.hour_ms % kHour, 0);
  }
  EXPECT_EQ(requests, 3u);
  EXPECT_EQ(tokens, 45u);
  const auto recent = (*db)->recent_audit(2);
  ASSERT_TRUE(recent);
  ASSERT_EQ(recent->size(), 2u);
  EXPECT_EQ((*recent)[0].detail, "three");
  EXPECT_EQ((*recent)[1].detail, "two");
  // The chain goes on after the reopen: three batches, of one, two and one rows.
  ASSERT_TRUE((*db)->write({{7, audit(kT0 + 50, "four")}}));
  auto verdict = (*db)->verify();
  ASSERT_TRUE(verdict);
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->batches, 3);
  EXPECT_EQ(verdict->rows, 4);
  exec(path, "UPDATE audit SET detail = 'forged' WHERE seq = 5");
  verdict = (*db)->verify();
  ASSERT_TRUE(verdict);
  EXPECT_FALSE(verdict->ok);
  EXPECT_NE(verdict->problem.find("batch 2"), std::string::npos) << verdict->problem;
}

TEST(SqliteStore, RetentionCutsAPrefixThatLeavesTheTrailVerifiable) {
  test::TempDir dir("sqlite-store");
  auto db = SqliteStore::open(dir.file("usage.db"), "gw-1");
  ASSERT_TRUE(db) << db.error();
  uint64_t seq = 0;
  for (int day = 0; day < 5; ++day) {
    const int64_t ts = kT0 + day * 24 * kHour;
    ++seq;
    const uint64_t a = seq;
    ++seq;
    ASSERT_TRUE((*db)->write({{a, usage(ts, "a")}, {seq, audit(ts, "day")}}));
  }
  ASSERT_TRUE((*db)->prune(kT0 + 2 * 24 * kHour));  // days 0 and 1 go
  const auto hours = (*db)->hourly_usage_since(0);
  ASSERT_TRUE(hours);
  EXPECT_EQ(hours->size(), 3u);
  const auto verdict = (*db)->verify();
  ASSERT_TRUE(verdict);
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
