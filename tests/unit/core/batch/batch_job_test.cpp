#include "core/batch/batch_job.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace arbiter::batch {
namespace {

TEST(BatchJob, ItsRecordReadsBackAsItWasAndTheApiObjectHidesTheTenant) {
  Job job{.id = "batch_1", .tenant = "alpha", .endpoint = "/v1/chat/completions", .input_file_id = "file-1",
          .completion_window = "24h", .status = Status::kCancelling, .created_at = 100, .in_progress_at = 101,
          .expires_at = 86500, .cancelling_at = 150, .total = 7, .completed = 3, .failed = 1,
          .metadata = boost::json::object{{"job", "nightly"}}, .output_id = "file-o", .error_id = "file-e"};
  const auto back = from_record(to_record(job));
  ASSERT_TRUE(back);
  EXPECT_EQ(to_record(*back), to_record(job));
  EXPECT_EQ(back->tenant, "alpha");
  EXPECT_EQ(back->status, Status::kCancelling);
  EXPECT_EQ(back->completed, 3u);
  EXPECT_EQ(back->output_id, "file-o");
  const boost::json::object api = to_api(job);
  EXPECT_FALSE(api.contains("tenant"));
  EXPECT_FALSE(api.contains("output_id"));
  EXPECT_EQ(api.at("status").as_string(), "cancelling");
  EXPECT_TRUE(api.at("completed_at").is_null());
  EXPECT_TRUE(api.at("output_file_id").is_null());
  EXPECT_EQ(api.at("request_counts").at("total").to_number<int>(), 7);
  EXPECT_FALSE(from_record("{\"id\":\"x\",\"status\":\"sleeping\"}"));
  EXPECT_FALSE(from_record("not json"));
}

TEST(BatchJob, ACompletionWindowIsWholeHoursWithinTheBound) {
  EXPECT_EQ(parse_window("24h", std::chrono::hours(168)), std::chrono::hours(24));
  EXPECT_EQ(parse_window("1h", std::chrono::hours(168)), std::chrono::hours(1));
  EXPECT_FALSE(parse_window("0h", std::chrono::hours(168)));
  EXPECT_FALSE(parse_window("169h", std::chrono::hours(168)));
  EXPECT_FALSE(parse_window("24", std::chrono::hours(168)));
  EXPECT_FALSE(parse_window("1.5h", std::chrono::hours(168)));
  EXPECT_FALSE(parse_window("h", std::chrono::hours(168)));
}

TEST(BatchJob, ResultAndErrorLinesAreOpenAisAndNameTheirLine) {
  const std::string ok = result_line("batch_req_1", "a", 200, "req-1", R"({"id":"x"})");
  const auto o = boost::json::parse(ok).as_object();
  EXPECT_EQ(o.at("custom_id").as_string(), "a");
  EXPECT_EQ(o.at("response").at("status_code").to_number<int>(), 200);
  EXPECT_EQ(o.at("response").at("body").at("id").as_string(), "x");
  EXPECT_TRUE(o.at("error").is_null());
  // A body that is not JSON is kept as text.
  const auto text = boost::json::parse(result_line("r", "b", 502, "", "bad gateway")).as_object();
  EXPECT_EQ(text.at("response").at("body").as_string(), "bad gateway");
  const auto err = boost::json::parse(error_line("r", "c", "batch_expired", "late")).as_object();
  EXPECT_TRUE(err.at("response").is_null());
  EXPECT_EQ(err.at("error").at("code").as_string(), "batch_expired");
  EXPECT_EQ(read_written_line(ok).custom_id, "a");
  EXPECT_EQ(read_written_line(ok).error_code, "");
  EXPECT_EQ(read_written_line(error_line("r", "c", kExpiredCode, "late")).error_code, "batch_expired");
  EXPECT_EQ(read_written_line(R"({"custom_id":"a","respo)").custom_id, "");  // cut short by a crash
}

}  // namespace
}  // namespace arbiter::batch
