#include "gateway/batch/batch_records.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>

namespace arbiter::batch {

namespace {

// Of the jobs not ended, the statuses in the claim's and the index's terms.
constexpr std::string_view kOpen = "status IN ('validating', 'in_progress', 'finalizing', 'cancelling')";

int64_t number(const std::string& text) { return std::strtoll(text.c_str(), nullptr, 10); }

// Creation order within a second (the lists' order): nanoseconds, strictly
// increasing in this process.
std::string made_ns() {
  static std::atomic<int64_t> last{0};
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  int64_t prev = last.load();
  int64_t next;
  do {
    next = std::max(now, prev + 1);
  } while (!last.compare_exchange_weak(prev, next));
  return std::to_string(next);
}

constexpr const char* kFileColumns = "id, tenant, filename, purpose, bytes, created_at, expires_at";

FileInfo file_of(const BatchDb::Row& r) {
  return FileInfo{.id = r[0], .tenant = r[1], .filename = r[2], .purpose = r[3],
                  .bytes = static_cast<uint64_t>(number(r[4])), .created_at = number(r[5]),
                  .expires_at = number(r[6])};
}

// A job as the API shows it: a cancel asked for and not yet taken up by the
// replica running it reads as cancelling.
std::optional<Job> shown(const std::string& record, int64_t cancel_at) {
  auto job = from_record(record);
  if (job && cancel_at != 0 && (job->status == Status::kInProgress || job->status == Status::kValidating)) {
    job->status = Status::kCancelling;
    job->cancelling_at = cancel_at;
  }
  return job;
}

// `rows` past `limit` say more are left; the page is the first `limit`.
template <class T>
void trim(std::vector<T>& page, std::size_t limit, bool& more) {
  more = page.size() > limit;
  if (more) page.resize(limit);
}

}  // namespace

std::expected<std::vector<BatchDb::Row>, std::string> BatchRecords::query(const std::string& sql,
                                                                          const std::vector<std::string>& params) {
  std::lock_guard lock(mu_);
  return db_->query(sql, params);
}

std::expected<void, std::string> BatchRecords::add_file(const FileInfo& f) {
  auto done = query("INSERT INTO batch_files VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
                         {f.id, f.tenant, f.filename, f.purpose, std::to_string(f.bytes), std::to_string(f.created_at),
                          made_ns(), std::to_string(f.expires_at)});
  if (!done) return std::unexpected(done.error());
  return {};
}

std::expected<std::optional<FileInfo>, std::string> BatchRecords::file(std::string_view tenant, std::string_view id) {
  auto rows = query(std::string("SELECT ") + kFileColumns + " FROM batch_files WHERE id = $1 AND tenant = $2",
                         {std::string(id), std::string(tenant)});
  if (!rows) return std::unexpected(rows.error());
  if (rows->empty()) return std::nullopt;
  return file_of(rows->front());
}

std::expected<std::vector<FileInfo>, std::string> BatchRecords::files(std::string_view tenant,
                                                                      std::string_view purpose,
                                                                      std::string_view after, std::size_t limit,
                                                                      bool oldest_first, bool& more) {
  std::vector<std::string> params{std::string(tenant)};
  std::string sql = std::string("SELECT ") + kFileColumns + " FROM batch_files WHERE tenant = $1";
  if (!purpose.empty()) {
    params.emplace_back(purpose);
    sql += " AND purpose = $" + std::to_string(params.size());
  }
  if (!after.empty()) {
    params.emplace_back(after);
    sql += std::string(" AND (created_at, made_ns) ") + (oldest_first ? ">" : "<") +
           " (SELECT created_at, made_ns FROM batch_files WHERE tenant = $1 AND id = $" +
           std::to_string(params.size()) + ")";
  }
  sql += oldest_first ? " ORDER BY created_at, made_ns" : " ORDER BY created_at DESC, made_ns DESC";
  sql += " LIMIT " + std::to_string(limit + 1);
  auto rows = query(sql, params);
  if (!rows) return std::unexpected(rows.error());
  std::vector<FileInfo> page;
  for (const auto& r : *rows) page.push_back(file_of(r));
  trim(page, limit, more);
  return page;
}

std::expected<bool, std::string> BatchRecords::remove_file(std::string_view tenant, std::string_view id) {
  auto rows = query("DELETE FROM batch_files WHERE id = $1 AND tenant = $2 RETURNING id",
                         {std::string(id), std::string(tenant)});
  if (!rows) return std::unexpected(rows.error());
  return !rows->empty();
}

std::expected<uint64_t, std::string> BatchRecords::tenant_bytes(std::string_view tenant) {
  auto rows = query("SELECT COALESCE(SUM(bytes), 0) FROM batch_files WHERE tenant = $1", {std::string(tenant)});
  if (!rows) return std::unexpected(rows.error());
  return rows->empty() ? 0 : static_cast<uint64_t>(number((*rows)[0][0]));
}

std::expected<std::vector<std::string>, std::string> BatchRecords::expire_files(int64_t now) {
  auto rows = query("DELETE FROM batch_files WHERE expires_at > 0 AND expires_at <= $1 RETURNING id",
                    {std::to_string(now)});
  if (!rows) return std::unexpected(rows.error());
  std::vector<std::string> ids;
  for (auto& r : *rows) ids.push_back(std::move(r[0]));
  return ids;
}

std::expected<void, std::string> BatchRecords::add_job(const Job& job, std::string_view owner, int64_t lease_until) {
  auto done = query("INSERT INTO batch_jobs VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0) ON CONFLICT (id) DO NOTHING",
                         {job.id, job.tenant, std::to_string(job.created_at), made_ns(),
                          std::string(status_name(job.status)), to_record(job), std::string(owner),
                          std::to_string(lease_until)});
  if (!done) return std::unexpected(done.error());
  return {};
}

std::expected<bool, std::string> BatchRecords::save_job(const Job& job, std::string_view owner) {
  auto rows = query("UPDATE batch_jobs SET status = $2, record = $3 WHERE id = $1 AND owner = $4 RETURNING id",
                         {job.id, std::string(status_name(job.status)), to_record(job), std::string(owner)});
  if (!rows) return std::unexpected(rows.error());
  return !rows->empty();
}

std::expected<std::optional<Job>, std::string> BatchRecords::job(std::string_view tenant, std::string_view id) {
  auto rows = query("SELECT record, cancel_at FROM batch_jobs WHERE id = $1 AND tenant = $2",
                         {std::string(id), std::string(tenant)});
  if (!rows) return std::unexpected(rows.error());
  if (rows->empty()) return std::nullopt;
  return shown((*rows)[0][0], number((*rows)[0][1]));
}

std::expected<std::vector<Job>, std::string> BatchRecords::jobs(std::string_view tenant, std::string_view after,
                                                                std::size_t limit, bool& more) {
  std::vector<std::string> params{std::string(tenant)};
  std::string sql = "SELECT record, cancel_at FROM batch_jobs WHERE tenant = $1";
  if (!after.empty()) {
    params.emplace_back(after);
    sql += " AND (created_at, made_ns) < (SELECT created_at, made_ns FROM batch_jobs WHERE tenant = $1 AND id = $2)";
  }
  sql += " ORDER BY created_at DESC, made_ns DESC LIMIT " + std::to_string(limit + 1);
  auto rows = query(sql, params);
  if (!rows) return std::unexpected(rows.error());
  std::vector<Job> page;
  for (const auto& r : *rows) {
    if (auto job = shown(r[0], number(r[1]))) page.push_back(std::move(*job));
  }
  trim(page, limit, more);
  return page;
}

std::expected<std::optional<Job>, std::string> BatchRecords::ask_cancel(std::string_view tenant, std::string_view id,
                                                                        int64_t now) {
  auto asked = query(
      "UPDATE batch_jobs SET cancel_at = $3 WHERE id = $1 AND tenant = $2 AND cancel_at = 0"
      " AND status IN ('validating', 'in_progress')",
      {std::string(id), std::string(tenant), std::to_string(now)});
  if (!asked) return std::unexpected(asked.error());
  return job(tenant, id);
}

std::expected<std::vector<BatchRecords::Claimed>, std::string> BatchRecords::claim(std::string_view owner,
                                                                                   int64_t now, int64_t until) {
  auto rows = query("UPDATE batch_jobs SET owner = $1, lease_until = $3 WHERE " + std::string(kOpen) +
                             " AND (owner = $1 OR lease_until < $2) RETURNING record, cancel_at",
                         {std::string(owner), std::to_string(now), std::to_string(until)});
  if (!rows) return std::unexpected(rows.error());
  std::vector<Claimed> held;
  for (const auto& r : *rows) {
    if (auto job = from_record(r[0])) held.push_back(Claimed{.job = std::move(*job), .cancel_at = number(r[1])});
  }
  return held;
}

}  // namespace arbiter::batch
