// The Batch API's records in a real SQLite file: the contract every kind
// of database keeps (support/batch_records_contract.hpp).
#include <gtest/gtest.h>

#include "support/batch_records_contract.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::test {
namespace {

struct SqliteFile {
  TempDir dir{"batch-records"};
  OpenBatchDb open = [this] {
    StoreConfig store;
    store.path = dir.file("arbiter.db");
    auto db = batch::open_batch_db(store, dir.path());
    EXPECT_TRUE(db) << (db ? "" : db.error());
    return std::move(*db);
  };
};

TEST(BatchRecords, ALeaseMovesOnlyOnceItRanOutAndTheLoserCannotWriteTheJob) {
  check_a_lease_moves_only_once_it_ran_out(SqliteFile().open);
}

TEST(BatchRecords, ACancelShowsAtOnceReachesTheHolderAndOnlyItsTenantMayAsk) {
  check_a_cancel_shows_at_once_and_reaches_the_holder(SqliteFile().open);
}

TEST(BatchRecords, ListsPageNewestFirstWithoutAGapOrARepeat) {
  check_lists_page_without_a_gap_or_a_repeat(SqliteFile().open);
}

TEST(BatchRecords, ExpiredFilesGoOnce) { check_expired_files_go_once(SqliteFile().open); }

}  // namespace
}  // namespace arbiter::test
