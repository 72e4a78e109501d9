// The Batch API's files (/v1/files): each one's bytes in a folder
// (batches.dir/files, shared by replicas), what the API shows of it in the
// records (batch_records.hpp). Input files are uploaded; a batch's output
// and error files are put here when it ends. A tenant sees only its own.
// The bytes are written to a temporary name and renamed into place before
// the row is added (a crash leaves bytes without a row, never a row
// without bytes); a delete takes the row first. Called on the Batch API's
// worker thread (the records' own).
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/batch/batch_records.hpp"
#include "gateway/batch/file_info.hpp"

namespace arbiter::batch {

// A fresh id: `prefix` and 24 hex digits.
std::string random_id(std::string_view prefix);
// Now, in Unix seconds (the API's times).
int64_t unix_seconds();

class FileStore {
 public:
  // Unix seconds: the files' times (injected for tests).
  using UnixClock = std::function<int64_t()>;

  // `dir` made when missing; why not when it cannot be.
  static std::expected<std::unique_ptr<FileStore>, std::string> open(std::filesystem::path dir,
                                                                     BatchRecords& records, UnixClock now);

  // A new file holding `content`, kept `expires_after` seconds (0: until
  // deleted).
  std::expected<FileInfo, std::string> add(std::string_view tenant, std::string_view filename,
                                           std::string_view purpose, std::string_view content, int64_t expires_after);
  // The bytes the tenant's files hold.
  std::expected<uint64_t, std::string> tenant_bytes(std::string_view tenant) { return records_.tenant_bytes(tenant); }
  // File `id` made of the file at `path` (moved in, same file system).
  // Again for an id it holds: nothing changes (a finished batch's files,
  // adopted again after a crash in between).
  std::expected<FileInfo, std::string> adopt(std::string_view id, std::string_view tenant, std::string_view filename,
                                             std::string_view purpose, const std::filesystem::path& path,
                                             int64_t expires_after);
  // The tenant's file `id`; none when it has no such file.
  std::expected<std::optional<FileInfo>, std::string> find(std::string_view tenant, std::string_view id);
  // Its bytes; none when the tenant has no such file; an error when its
  // bytes cannot be read (a folder not shared by the replicas).
  std::expected<std::optional<std::string>, std::string> content(std::string_view tenant, std::string_view id);
  // The bytes of a file found already.
  std::expected<std::string, std::string> bytes(const FileInfo& file) const;
  // BatchRecords::files.
  std::expected<std::vector<FileInfo>, std::string> list(std::string_view tenant, std::string_view purpose,
                                                         std::string_view after, std::size_t limit,
                                                         bool oldest_first, bool& more);
  // False when the tenant has no such file.
  std::expected<bool, std::string> remove(std::string_view tenant, std::string_view id);
  // Deletes the files whose time has come by `now`; how many.
  std::expected<std::size_t, std::string> expire(int64_t now);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  FileStore(std::filesystem::path dir, BatchRecords& records, UnixClock now)
      : dir_(std::move(dir)), records_(records), now_(std::move(now)) {}

  std::filesystem::path dir_;
  BatchRecords& records_;
  UnixClock now_;
};

// Writes `content` to `path` whole or not at all (a temporary, renamed).
std::optional<std::string> write_whole(const std::filesystem::path& path, std::string_view content);
// The bytes of `path`; none when it cannot be read.
std::optional<std::string> read_whole(const std::filesystem::path& path);

}  // namespace arbiter::batch
