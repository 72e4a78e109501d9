// A Batch API job as OpenAI's `batch` object describes it: its status and
// the times it reached each, its files, its request counts. The same JSON,
// with the owning tenant added, is the job's record on disk, so a restart
// reads back exactly what the API showed. Pure: times are given.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace arbiter::batch {

enum class Status { kValidating, kInProgress, kFinalizing, kCompleted, kFailed, kExpired, kCancelling, kCancelled };

std::string_view status_name(Status s);
std::optional<Status> status_from(std::string_view name);
// Completed, failed, expired, cancelled: nothing more happens to it.
bool terminal(Status s);

struct Job {
  std::string id;
  std::string tenant;  // its owner's name (the record only; never in the API object)
  std::string endpoint;
  std::string input_file_id;
  std::string completion_window;  // as the client gave it ("24h")
  Status status = Status::kValidating;
  std::string output_file_id;  // empty: none (yet)
  std::string error_file_id;
  // Unix seconds; 0: not reached.
  int64_t created_at = 0;
  int64_t in_progress_at = 0;
  int64_t expires_at = 0;
  int64_t finalizing_at = 0;
  int64_t completed_at = 0;
  int64_t failed_at = 0;
  int64_t expired_at = 0;
  int64_t cancelling_at = 0;
  int64_t cancelled_at = 0;
  uint64_t total = 0;
  uint64_t completed = 0;  // answered 2xx
  uint64_t failed = 0;     // answered otherwise, or not run (expired)
  boost::json::value metadata;  // null or an object of strings
  std::string errors;           // why it failed (validation), empty: none
  // The ids its output and error files will have (the record only): fixed
  // at its creation, so that putting them in place can be done again after
  // a crash.
  std::string output_id;
  std::string error_id;
  // Seconds its output and error files are kept once written (the record
  // only; output_expires_after); 0: until deleted.
  int64_t output_expires_after = 0;
};

// The API's `batch` object.
boost::json::object to_api(const Job& job);
// The record: the API object and the tenant.
std::string to_record(const Job& job);
std::optional<Job> from_record(std::string_view text);

// OpenAI's expires_after of a file: seconds after its creation (the one
// anchor, created_at), from an hour to 30 days; what a batch's files get
// when the client names none (OpenAI's default for purpose batch).
inline constexpr int64_t kMinExpirySeconds = 3'600;
inline constexpr int64_t kMaxExpirySeconds = 2'592'000;
// Why `anchor` and `seconds` are not an expiry policy; none when they are.
std::optional<std::string> expiry_error(std::string_view anchor, int64_t seconds);

// A completion_window ("24h"): its length, within [1h, max]; nullopt when
// it is not a whole number of hours in that range.
std::optional<std::chrono::hours> parse_window(std::string_view window, std::chrono::hours max);

// One line of an output or error file, as OpenAI writes them: `id`
// (batch_req_...), the line's custom_id, and either the response (its
// status, request id and body) or an error (code, message).
std::string result_line(std::string_view id, std::string_view custom_id, unsigned status,
                        std::string_view request_id, std::string_view body);
std::string error_line(std::string_view id, std::string_view custom_id, std::string_view code,
                       std::string_view message);

// The error code of a line the completion window closed on.
inline constexpr std::string_view kExpiredCode = "batch_expired";

// What a written result or error line says of its request: its custom_id
// (empty when it has none: a line cut short by a crash) and its error's
// code (empty for a response).
struct WrittenLine {
  std::string custom_id;
  std::string error_code;
};
WrittenLine read_written_line(std::string_view line);

}  // namespace arbiter::batch
