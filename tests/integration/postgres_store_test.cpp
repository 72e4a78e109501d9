// The store on a real PostgreSQL server (Debian's, started by the test on a
// free loopback port): what every store does (support/store_contract.hpp);
// two replicas sharing one database, each with its own trail, and the sums
// covering both; a replica name held by one gateway refused to another; text
// PostgreSQL would refuse stored cleaned rather than blocking the queue; the
// server killed between batches: the write fails within its deadline, and
// after a restart the next one lands with nothing doubled; a database not
// reachable at the start does not stop the store opening.
#include <gtest/gtest.h>

#include "gateway/store/postgres_store.hpp"
#include "support/free_port.hpp"
#include "support/batch_records_contract.hpp"
#include "support/postgres_server.hpp"
#include "support/store_contract.hpp"

namespace arbiter::test {
namespace {

using store::AuditView;
using store::Database;
using store::PostgresStore;
using store::RowView;
using store::UsageView;

class PostgresStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new PostgresServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  // A database of the test's own.
  void SetUp() override {
    db_ = "t" + std::to_string(++made_);
    server_->create_database(db_);
  }
  std::unique_ptr<PostgresStore> open(const std::string& replica) {
    auto db = PostgresStore::open(server_->url(db_), replica);
    EXPECT_TRUE(db) << db.error();
    return db ? std::move(*db) : nullptr;
  }
  StoreUnderTest under_test() {
    return {.open = [this](const std::string& replica) -> std::unique_ptr<Database> { return open(replica); },
            .edit = [this](const std::string& sql) { (void)server_->query(db_, sql); }};
  }
  std::vector<std::string> query(const std::string& sql) { return server_->query(db_, sql); }
  // The Batch API's records in the test's database.
  OpenBatchDb batch_db() {
    return [this] {
      StoreConfig settings;
      settings.url = server_->url(db_);
      auto db = batch::open_batch_db(settings, "/nonexistent");
      EXPECT_TRUE(db) << (db ? "" : db.error());
      return std::move(*db);
    };
  }

  static PostgresServer* server_;
  static int made_;
  std::string db_;
};
PostgresServer* PostgresStoreTest::server_ = nullptr;
int PostgresStoreTest::made_ = 0;

constexpr int64_t kT0 = 1'796'600'000'000 / 3'600'000 * 3'600'000;

UsageView usage(std::string_view id, std::string_view tenant) {
  return {.ts_ms = kT0, .request_id = id, .tenant = tenant, .team = "ml", .model = "m1", .klass = "chat",
          .status = 200, .prompt_tokens = 10, .completion_tokens = 5, .cached_tokens = 0, .engine_ms = 2,
          .cost = 0.5, .tokens_from = "events"};
}

AuditView audit(std::string_view id, std::string_view detail) {
  return {.ts_ms = kT0, .kind = "admitted", .request_id = id, .tenant = "t", .klass = "chat", .model = "m1",
          .detail = detail};
}

TEST_F(PostgresStoreTest, WritesOnceKeepsItsPlaceSumsByHourAndVerifies) {
  check_writes_once_keeps_its_place_sums_and_verifies(under_test());
}

TEST_F(PostgresStoreTest, RetentionCutsAPrefixThatLeavesTheTrailVerifiable) {
  check_retention_cuts_a_prefix_that_leaves_the_trail_verifiable(under_test());
}

TEST_F(PostgresStoreTest, ALargeBatchIsStoredRowForRow) { check_a_large_batch_is_stored_row_for_row(under_test()); }

TEST_F(PostgresStoreTest, BatchLeasesMoveOnlyOnceTheyRanOut) { check_a_lease_moves_only_once_it_ran_out(batch_db()); }

TEST_F(PostgresStoreTest, BatchCancelsShowAtOnceAndReachTheHolder) {
  check_a_cancel_shows_at_once_and_reaches_the_holder(batch_db());
}

TEST_F(PostgresStoreTest, BatchListsPageWithoutAGapOrARepeat) { check_lists_page_without_a_gap_or_a_repeat(batch_db()); }

TEST_F(PostgresStoreTest, BatchFilesExpireOnce) { check_expired_files_go_once(batch_db()); }

TEST_F(PostgresStoreTest, ReplicasShareOneDatabaseEachWithItsOwnTrail) {
  auto a = open("gw-a");
  auto b = open("gw-b");
  ASSERT_TRUE(a && b);
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    ASSERT_TRUE(a->write({{seq * 2 - 1, usage("a", "x")}, {seq * 2, audit("a", "from a")}}));
    ASSERT_TRUE(b->write({{seq * 2 - 1, usage("b", "y")}, {seq * 2, audit("b", "from b")}}));
  }
  // The same sequence numbers from two replicas: six rows each way, none lost.
  EXPECT_EQ(query("SELECT replica, COUNT(*) FROM usage GROUP BY replica ORDER BY replica"),
            (std::vector<std::string>{"gw-a|3", "gw-b|3"}));
  const auto hours = a->hourly_usage_since(0);
  ASSERT_TRUE(hours) << hours.error();
  uint64_t requests = 0;
  for (const auto& h : *hours) requests += h.requests;
  EXPECT_EQ(requests, 6u) << "a replica's sums cover every replica's rows";
  const auto recent = b->recent_audit(10);
  ASSERT_TRUE(recent) << recent.error();
  ASSERT_EQ(recent->size(), 3u);  // its own
  EXPECT_EQ(recent->front().detail, "from b");
  auto verdict = a->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->batches, 6);
  // A trail longer than one fetch of the check's cursor.
  for (uint64_t seq = 7; seq <= 46; ++seq) ASSERT_TRUE(b->write({{seq, audit("b", "more")}}));
  verdict = a->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->batches, 46);
  EXPECT_EQ(verdict->rows, 46);
  // Another gateway given the name gw-a while gw-a writes is refused.
  auto twin = open("gw-a");
  ASSERT_TRUE(twin);
  const auto refused = twin->write({{7, usage("twin", "x")}});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("another gateway"), std::string::npos) << refused.error();
  a.reset();  // gw-a stops: its name is free at once (it releases its lock before closing)
  EXPECT_TRUE(twin->write({{7, usage("twin", "x")}}));
  EXPECT_EQ(twin->written(), 7u);
}

TEST_F(PostgresStoreTest, TextPostgresRefusesIsStoredCleanedAndStillVerifies) {
  auto db = open("gw-1");
  ASSERT_TRUE(db);
  const std::string bad_id = std::string("id-\xff\xfe-") + '\0' + "end";
  ASSERT_TRUE(db->write({{1, usage(bad_id, "t\xc3")}, {2, audit(bad_id, "quote \" back\\slash")}}));
  EXPECT_EQ(query("SELECT request_id FROM usage"), std::vector<std::string>{"id-\xef\xbf\xbd\xef\xbf\xbd-end"});
  EXPECT_EQ(query("SELECT detail FROM audit"), std::vector<std::string>{"quote \" back\\slash"});
  const auto verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_TRUE(verdict->ok) << verdict->problem;
}

TEST_F(PostgresStoreTest, AServerKilledBetweenBatchesFailsTheWriteAndTheNextLandsOnce) {
  auto db = open("gw-1");
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->write({{1, usage("r1", "x")}, {2, audit("r1", "one")}}));
  server_->kill();
  EXPECT_FALSE(db->write({{3, usage("r2", "x")}, {4, audit("r2", "two")}}));
  server_->restart();
  // The writer hands the same rows again (they stayed queued), and more.
  ASSERT_TRUE(db->write({{3, usage("r2", "x")}, {4, audit("r2", "two")}, {5, usage("r3", "x")}}));
  ASSERT_TRUE(db->write({{3, usage("r2", "x")}, {4, audit("r2", "two")}, {5, usage("r3", "x")}}));
  EXPECT_EQ(query("SELECT COUNT(*), COUNT(DISTINCT request_id) FROM usage"), std::vector<std::string>{"3|3"});
  const auto verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->batches, 2);
}

// A database not reachable when the gateway starts: the store opens (its
// rows wait in the journal) and says why each write fails; a read right
// after is answered at once with the same reason, not a second connect.
TEST(PostgresStoreDown, AnUnreachableDatabaseDoesNotStopTheStoreOpening) {
  const std::string url = "postgresql://arbiter@127.0.0.1:" + std::to_string(free_port()) + "/postgres";
  auto db = PostgresStore::open(url, "gw-1");
  ASSERT_TRUE(db) << db.error();
  EXPECT_EQ((*db)->written(), 0u);
  const auto refused = (*db)->write({{1, usage("r1", "x")}});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("PostgreSQL"), std::string::npos) << refused.error();
  const auto read = (*db)->hourly_usage_since(0);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error(), refused.error());
  // A connection string that does not parse is refused at once.
  EXPECT_FALSE(PostgresStore::open("postgresql://db/x?nosuchoption=1", "gw-1"));
}

}  // namespace
}  // namespace arbiter::test
