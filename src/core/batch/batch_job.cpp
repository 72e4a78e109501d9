#include "core/batch/batch_job.hpp"

#include <array>
#include <charconv>
#include <utility>

#include <boost/json.hpp>

namespace arbiter::batch {

namespace {

constexpr std::array<std::pair<Status, std::string_view>, 8> kNames{{
    {Status::kValidating, "validating"},
    {Status::kInProgress, "in_progress"},
    {Status::kFinalizing, "finalizing"},
    {Status::kCompleted, "completed"},
    {Status::kFailed, "failed"},
    {Status::kExpired, "expired"},
    {Status::kCancelling, "cancelling"},
    {Status::kCancelled, "cancelled"},
}};

boost::json::value time_or_null(int64_t t) { return t ? boost::json::value(t) : boost::json::value(nullptr); }
boost::json::value text_or_null(const std::string& s) {
  return s.empty() ? boost::json::value(nullptr) : boost::json::value(s);
}
int64_t time_of(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && (v->is_int64() || v->is_uint64()) ? v->to_number<int64_t>() : 0;
}
std::string text_of(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace

std::string_view status_name(Status s) {
  for (const auto& [status, name] : kNames) {
    if (status == s) return name;
  }
  return "?";
}

std::optional<Status> status_from(std::string_view name) {
  for (const auto& [status, n] : kNames) {
    if (n == name) return status;
  }
  return std::nullopt;
}

bool terminal(Status s) {
  return s == Status::kCompleted || s == Status::kFailed || s == Status::kExpired || s == Status::kCancelled;
}

boost::json::object to_api(const Job& job) {
  boost::json::value errors = nullptr;
  if (!job.errors.empty()) {
    errors = boost::json::object{
        {"object", "list"},
        {"data", boost::json::array{boost::json::object{
                     {"code", "invalid_input"}, {"message", job.errors}, {"param", nullptr}, {"line", nullptr}}}}};
  }
  return {{"id", job.id},
          {"object", "batch"},
          {"endpoint", job.endpoint},
          {"errors", std::move(errors)},
          {"input_file_id", job.input_file_id},
          {"completion_window", job.completion_window},
          {"status", status_name(job.status)},
          {"output_file_id", text_or_null(job.output_file_id)},
          {"error_file_id", text_or_null(job.error_file_id)},
          {"created_at", job.created_at},
          {"in_progress_at", time_or_null(job.in_progress_at)},
          {"expires_at", time_or_null(job.expires_at)},
          {"finalizing_at", time_or_null(job.finalizing_at)},
          {"completed_at", time_or_null(job.completed_at)},
          {"failed_at", time_or_null(job.failed_at)},
          {"expired_at", time_or_null(job.expired_at)},
          {"cancelling_at", time_or_null(job.cancelling_at)},
          {"cancelled_at", time_or_null(job.cancelled_at)},
          {"request_counts",
           boost::json::object{{"total", job.total}, {"completed", job.completed}, {"failed", job.failed}}},
          {"metadata", job.metadata}};
}

std::string to_record(const Job& job) {
  boost::json::object o = to_api(job);
  o["tenant"] = job.tenant;
  o["validation_errors"] = job.errors;
  o["output_id"] = job.output_id;
  o["error_id"] = job.error_id;
  o["output_expires_after"] = job.output_expires_after;
  return boost::json::serialize(o);
}

std::optional<Job> from_record(std::string_view text) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const boost::json::object& o = v.get_object();
  Job job;
  job.id = text_of(o, "id");
  job.tenant = text_of(o, "tenant");
  job.endpoint = text_of(o, "endpoint");
  job.input_file_id = text_of(o, "input_file_id");
  job.completion_window = text_of(o, "completion_window");
  const auto status = status_from(text_of(o, "status"));
  if (job.id.empty() || !status) return std::nullopt;
  job.status = *status;
  job.output_file_id = text_of(o, "output_file_id");
  job.error_file_id = text_of(o, "error_file_id");
  job.created_at = time_of(o, "created_at");
  job.in_progress_at = time_of(o, "in_progress_at");
  job.expires_at = time_of(o, "expires_at");
  job.finalizing_at = time_of(o, "finalizing_at");
  job.completed_at = time_of(o, "completed_at");
  job.failed_at = time_of(o, "failed_at");
  job.expired_at = time_of(o, "expired_at");
  job.cancelling_at = time_of(o, "cancelling_at");
  job.cancelled_at = time_of(o, "cancelled_at");
  if (const auto* counts = o.if_contains("request_counts"); counts && counts->is_object()) {
    job.total = static_cast<uint64_t>(time_of(counts->get_object(), "total"));
    job.completed = static_cast<uint64_t>(time_of(counts->get_object(), "completed"));
    job.failed = static_cast<uint64_t>(time_of(counts->get_object(), "failed"));
  }
  if (const auto* metadata = o.if_contains("metadata")) job.metadata = *metadata;
  job.errors = text_of(o, "validation_errors");
  job.output_id = text_of(o, "output_id");
  job.error_id = text_of(o, "error_id");
  job.output_expires_after = time_of(o, "output_expires_after");
  return job;
}

std::optional<std::string> expiry_error(std::string_view anchor, int64_t seconds) {
  if (anchor != "created_at") return "expires_after.anchor must be created_at";
  if (seconds < kMinExpirySeconds || seconds > kMaxExpirySeconds) {
    return "expires_after.seconds must be from 3600 (an hour) to 2592000 (30 days)";
  }
  return std::nullopt;
}

std::optional<std::chrono::hours> parse_window(std::string_view window, std::chrono::hours max) {
  if (window.size() < 2 || window.back() != 'h') return std::nullopt;
  int64_t hours = 0;
  const auto [end, ec] = std::from_chars(window.data(), window.data() + window.size() - 1, hours);
  if (ec != std::errc{} || end != window.data() + window.size() - 1 || hours < 1 || hours > max.count()) {
    return std::nullopt;
  }
  return std::chrono::hours(hours);
}

std::string result_line(std::string_view id, std::string_view custom_id, unsigned status,
                        std::string_view request_id, std::string_view body) {
  boost::system::error_code ec;
  boost::json::value parsed = boost::json::parse(body, ec);
  if (ec) parsed = boost::json::string(body);  // not JSON: kept as text, nothing lost
  return boost::json::serialize(boost::json::object{
      {"id", id},
      {"custom_id", custom_id},
      {"response", boost::json::object{{"status_code", status}, {"request_id", request_id}, {"body", std::move(parsed)}}},
      {"error", nullptr}});
}

std::string error_line(std::string_view id, std::string_view custom_id, std::string_view code,
                       std::string_view message) {
  return boost::json::serialize(boost::json::object{{"id", id},
                                                    {"custom_id", custom_id},
                                                    {"response", nullptr},
                                                    {"error", boost::json::object{{"code", code}, {"message", message}}}});
}

WrittenLine read_written_line(std::string_view line) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(line, ec);
  if (ec || !v.is_object()) return {};
  const boost::json::object& o = v.get_object();
  WrittenLine out{.custom_id = text_of(o, "custom_id"), .error_code = {}};
  if (const auto* error = o.if_contains("error"); error && error->is_object()) {
    out.error_code = text_of(error->get_object(), "code");
  }
  return out;
}

}  // namespace arbiter::batch
