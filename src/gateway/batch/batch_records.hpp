// The Batch API's files and jobs as rows of its database (batch_db.hpp):
// what the API shows of each, and for a job which replica runs it and until
// when (its lease, renewed by claim()), and a cancel asked for on any
// replica. Shared by replicas through PostgreSQL: any of them answers for
// any file or job; the one holding a job's lease runs it, and a job whose
// lease runs out is claimed by another. Any thread (the Batch API's worker
// in the gateway): one statement at a time. Errors: the database's, as text.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch/batch_job.hpp"
#include "gateway/batch/batch_db.hpp"
#include "gateway/batch/file_info.hpp"

namespace arbiter::batch {

class BatchRecords {
 public:
  explicit BatchRecords(std::unique_ptr<BatchDb> db) : db_(std::move(db)) {}

  // A file's row; again for an id it holds: nothing changes.
  std::expected<void, std::string> add_file(const FileInfo& file);
  std::expected<std::optional<FileInfo>, std::string> file(std::string_view tenant, std::string_view id);
  // The tenant's files, newest first (`oldest_first`: the other way), after
  // the file `after` (empty: from the first; one it does not hold:
  // nothing), at most `limit`; `purpose` empty: all. `more`: whether files
  // are left past the page.
  std::expected<std::vector<FileInfo>, std::string> files(std::string_view tenant, std::string_view purpose,
                                                          std::string_view after, std::size_t limit,
                                                          bool oldest_first, bool& more);
  // False when the tenant has no such file.
  std::expected<bool, std::string> remove_file(std::string_view tenant, std::string_view id);
  // The bytes the tenant's files hold.
  std::expected<uint64_t, std::string> tenant_bytes(std::string_view tenant);
  // The rows of the files whose expires_at has come by `now` go: their ids
  // (each to one caller alone, whichever replica asks).
  std::expected<std::vector<std::string>, std::string> expire_files(int64_t now);

  // A new job, run by `owner` until `lease_until` (unix seconds); again
  // for an id it holds: nothing changes.
  std::expected<void, std::string> add_job(const Job& job, std::string_view owner, int64_t lease_until);
  // The job's record rewritten by the replica running it; false when
  // `owner` no longer holds it (another replica took it over).
  std::expected<bool, std::string> save_job(const Job& job, std::string_view owner);
  // The tenant's job `id` as the API shows it (a cancel asked for and not
  // yet taken up: cancelling).
  std::expected<std::optional<Job>, std::string> job(std::string_view tenant, std::string_view id);
  // Newest first, after the job `after`, at most `limit`.
  std::expected<std::vector<Job>, std::string> jobs(std::string_view tenant, std::string_view after,
                                                    std::size_t limit, bool& more);
  // Asks for the job's cancel (a job in progress: once); the job as shown
  // after, none when the tenant has no such job.
  std::expected<std::optional<Job>, std::string> ask_cancel(std::string_view tenant, std::string_view id,
                                                            int64_t now);

  // A job `owner` holds after a claim, and the time a cancel was asked
  // for it (0: none).
  struct Claimed {
    Job job;
    int64_t cancel_at = 0;
  };
  // Every job not ended whose lease is `owner`'s or ran out before `now`
  // is now `owner`'s until `until`: the jobs it holds.
  std::expected<std::vector<Claimed>, std::string> claim(std::string_view owner, int64_t now, int64_t until);

 private:
  std::expected<std::vector<BatchDb::Row>, std::string> query(const std::string& sql,
                                                             const std::vector<std::string>& params);

  std::mutex mu_;
  std::unique_ptr<BatchDb> db_;
};

}  // namespace arbiter::batch
