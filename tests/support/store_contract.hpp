// What every kind of store database does (gateway/store/database.hpp), run
// on each: SQLite (a file) and PostgreSQL (a real server). Rows written once
// (a replayed batch is ignored), the last written sequence number and the
// trail's end kept across a reopen, hourly sums for the ledger, the newest
// audit rows, an edit found by verify; retention cutting a prefix the rest
// of which still verifies; a batch of many rows stored row for row, its
// replay with a new tail adding only the tail.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "gateway/store/database.hpp"

namespace arbiter::test {

struct StoreUnderTest {
  // A new connection to the same (empty, at first) database, as `replica`.
  std::function<std::unique_ptr<store::Database>(const std::string& replica)> open;
  // Runs `sql` on it as another client would (an operator's hand).
  std::function<void(const std::string& sql)> edit;
};

void check_writes_once_keeps_its_place_sums_and_verifies(const StoreUnderTest& store);
void check_retention_cuts_a_prefix_that_leaves_the_trail_verifiable(const StoreUnderTest& store);
void check_a_large_batch_is_stored_row_for_row(const StoreUnderTest& store);

}  // namespace arbiter::test
