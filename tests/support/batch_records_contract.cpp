#include "support/batch_records_contract.hpp"

#include <gtest/gtest.h>

#include "gateway/batch/batch_records.hpp"

namespace arbiter::test {

using batch::BatchRecords;
using batch::FileInfo;
using batch::Job;
using batch::Status;

namespace {

Job job_of(std::string id, int64_t created_at) {
  return Job{.id = std::move(id), .tenant = "alpha", .endpoint = "/v1/chat/completions", .input_file_id = "file-1",
             .completion_window = "24h", .status = Status::kInProgress, .created_at = created_at,
             .in_progress_at = created_at, .expires_at = created_at + 86'400, .total = 3};
}

std::vector<std::string> ids_of(const std::vector<BatchRecords::Claimed>& held) {
  std::vector<std::string> ids;
  for (const auto& c : held) ids.push_back(c.job.id);
  return ids;
}

}  // namespace

void check_a_lease_moves_only_once_it_ran_out(const OpenBatchDb& open) {
  BatchRecords records(open());
  ASSERT_TRUE(records.add_job(job_of("batch_1", 1000), "gw-a", 1030));
  EXPECT_EQ(ids_of(*records.claim("gw-b", 1010, 1040)), std::vector<std::string>{}) << "a's lease holds";
  EXPECT_EQ(ids_of(*records.claim("gw-a", 1010, 1040)), std::vector<std::string>{"batch_1"}) << "renewed";
  EXPECT_EQ(ids_of(*records.claim("gw-b", 1039, 1069)), std::vector<std::string>{});
  EXPECT_EQ(ids_of(*records.claim("gw-b", 1041, 1071)), std::vector<std::string>{"batch_1"}) << "ran out: b's";
  Job progress = job_of("batch_1", 1000);
  progress.completed = 2;
  EXPECT_FALSE(*records.save_job(progress, "gw-a")) << "a lost it";
  EXPECT_TRUE(*records.save_job(progress, "gw-b"));
  EXPECT_EQ((*records.job("alpha", "batch_1"))->completed, 2u);
  // Ended: nobody claims it again.
  progress.status = Status::kCompleted;
  ASSERT_TRUE(*records.save_job(progress, "gw-b"));
  EXPECT_EQ(ids_of(*records.claim("gw-a", 5000, 5030)), std::vector<std::string>{});
  EXPECT_EQ(ids_of(*records.claim("gw-b", 5000, 5030)), std::vector<std::string>{});
}

void check_a_cancel_shows_at_once_and_reaches_the_holder(const OpenBatchDb& open) {
  BatchRecords records(open());
  ASSERT_TRUE(records.add_job(job_of("batch_1", 1000), "gw-a", 1030));
  EXPECT_FALSE(*records.ask_cancel("beta", "batch_1", 1005)) << "another tenant's: none";
  const auto shown = *records.ask_cancel("alpha", "batch_1", 1005);
  ASSERT_TRUE(shown);
  EXPECT_EQ(shown->status, Status::kCancelling);
  EXPECT_EQ(shown->cancelling_at, 1005);
  const auto held = *records.claim("gw-a", 1010, 1040);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].cancel_at, 1005);
  // Asked again: the first time stays.
  EXPECT_EQ((*records.ask_cancel("alpha", "batch_1", 1020))->cancelling_at, 1005);
}

void check_lists_page_without_a_gap_or_a_repeat(const OpenBatchDb& open) {
  BatchRecords records(open());
  // Five in one second, two later: the order within a second is creation's.
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(records.add_job(job_of("batch_" + std::to_string(i), i < 5 ? 1000 : 1000 + i), "gw-a", 0));
  }
  std::vector<std::string> seen;
  std::string after;
  for (bool more = true; more;) {
    auto listed = records.jobs("alpha", after, 3, more);
    ASSERT_TRUE(listed) << listed.error();
    auto page = std::move(*listed);
    ASSERT_FALSE(page.empty());
    for (const Job& j : page) seen.push_back(j.id);
    after = page.back().id;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"batch_6", "batch_5", "batch_4", "batch_3", "batch_2", "batch_1",
                                             "batch_0"}));
  bool more = false;
  EXPECT_TRUE(records.jobs("alpha", "batch_unknown", 3, more)->empty());
  EXPECT_TRUE(records.jobs("beta", "", 3, more)->empty());
  // Files: either way.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(records.add_file(FileInfo{.id = "file-" + std::to_string(i), .tenant = "alpha", .filename = "in",
                                             .purpose = i % 2 ? "batch_output" : "batch", .bytes = 1,
                                             .created_at = 1000}));
  }
  std::vector<std::string> oldest;
  const auto after_first = records.files("alpha", "", "file-0", 10, true, more);
  for (const FileInfo& f : *after_first) oldest.push_back(f.id);
  EXPECT_EQ(oldest, (std::vector<std::string>{"file-1", "file-2", "file-3"}));
  std::vector<std::string> inputs;
  const auto batch_inputs = records.files("alpha", "batch", "", 10, false, more);
  for (const FileInfo& f : *batch_inputs) inputs.push_back(f.id);
  EXPECT_EQ(inputs, (std::vector<std::string>{"file-2", "file-0"}));
  EXPECT_TRUE(*records.remove_file("alpha", "file-2"));
  EXPECT_FALSE(*records.remove_file("alpha", "file-2"));
  EXPECT_FALSE(*records.file("alpha", "file-2"));
}

void check_expired_files_go_once(const OpenBatchDb& open) {
  BatchRecords records(open());
  for (const auto& [id, expires_at] : {std::pair<std::string, int64_t>{"file-a", 1000}, {"file-b", 2000}, {"file-c", 0}}) {
    ASSERT_TRUE(records.add_file(FileInfo{.id = id, .tenant = "alpha", .filename = "in", .purpose = "batch",
                                          .bytes = 1, .created_at = 900, .expires_at = expires_at}));
  }
  EXPECT_EQ(*records.expire_files(999), std::vector<std::string>{});
  EXPECT_EQ(*records.expire_files(1500), std::vector<std::string>{"file-a"});
  EXPECT_EQ(*records.expire_files(1500), std::vector<std::string>{}) << "once";
  EXPECT_FALSE(*records.file("alpha", "file-a"));
  EXPECT_EQ((*records.file("alpha", "file-b"))->expires_at, 2000);
  EXPECT_EQ(*records.expire_files(1'000'000), std::vector<std::string>{"file-b"}) << "file-c is kept until deleted";
  EXPECT_TRUE(*records.file("alpha", "file-c"));
}

}  // namespace arbiter::test
