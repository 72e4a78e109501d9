// What the Batch API's records do (gateway/batch/batch_records.hpp) in each
// kind of database: SQLite (a file) and PostgreSQL (a real server). A job's
// lease moves to another replica only once it has run out, and the replica
// that lost it can no longer write it; a cancel asked for anywhere shows at
// once and reaches the holder at its claim; lists page newest first (files
// either way) without a gap or a repeat; an expired file's row goes once.
#pragma once

#include <functional>
#include <memory>

#include "gateway/batch/batch_db.hpp"

namespace arbiter::test {

// A new connection to an empty database.
using OpenBatchDb = std::function<std::unique_ptr<batch::BatchDb>()>;

void check_a_lease_moves_only_once_it_ran_out(const OpenBatchDb& open);
void check_a_cancel_shows_at_once_and_reaches_the_holder(const OpenBatchDb& open);
void check_lists_page_without_a_gap_or_a_repeat(const OpenBatchDb& open);
void check_expired_files_go_once(const OpenBatchDb& open);

}  // namespace arbiter::test
