// The Batch API's files (/v1/files): each one's bytes and a small JSON
// record of what the API shows of it (id, size, name, purpose, owner), in
// a folder (batches.dir/files). Input files are uploaded; a batch's output
// and error files are put here when it ends. A tenant sees only its own.
// Every write goes to a temporary name and is renamed into place: a crash
// leaves a file whole or absent. Any thread.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

namespace arbiter::batch {

struct FileInfo {
  std::string id;
  std::string tenant;
  std::string filename;
  std::string purpose;  // batch, batch_output, ...
  uint64_t bytes = 0;
  int64_t created_at = 0;  // unix seconds
};

boost::json::object to_api(const FileInfo& file);

// A fresh id: `prefix` and 24 hex digits.
std::string random_id(std::string_view prefix);
// Now, in Unix seconds (the API's times).
int64_t unix_seconds();

class FileStore {
 public:
  // Reads the records in `dir` (made when missing); why not when it cannot.
  static std::expected<std::unique_ptr<FileStore>, std::string> open(std::filesystem::path dir);

  // A new file holding `content`.
  std::expected<FileInfo, std::string> add(std::string_view tenant, std::string_view filename,
                                           std::string_view purpose, std::string_view content);
  // File `id` made of the file at `path` (moved in, same file system).
  // Again for an id it holds: nothing changes (a finished batch's files,
  // adopted again after a crash in between).
  std::expected<FileInfo, std::string> adopt(std::string_view id, std::string_view tenant, std::string_view filename,
                                             std::string_view purpose, const std::filesystem::path& path);
  // The tenant's file `id`; none when it has no such file.
  std::optional<FileInfo> find(std::string_view tenant, std::string_view id) const;
  // Its bytes; none when the tenant has no such file or it cannot be read.
  std::optional<std::string> content(std::string_view tenant, std::string_view id) const;
  // The tenant's files, newest first (`oldest_first`: the other way), after
  // the file `after` (empty: from the first), at most `limit`; `purpose`
  // empty: all. `more`: whether files are left past the page.
  std::vector<FileInfo> list(std::string_view tenant, std::string_view purpose, std::string_view after,
                             std::size_t limit, bool oldest_first, bool& more) const;
  bool remove(std::string_view tenant, std::string_view id);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  explicit FileStore(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::expected<FileInfo, std::string> record(FileInfo info);  // writes the record, keeps it

  std::filesystem::path dir_;
  mutable std::mutex mu_;
  struct Kept {
    FileInfo info;
    uint64_t seq = 0;  // made by this process: its order (the list's within a second); 0: read at start
  };
  std::map<std::string, Kept, std::less<>> files_;  // by id
  uint64_t made_ = 0;
};

// Writes `content` to `path` whole or not at all (a temporary, renamed).
std::optional<std::string> write_whole(const std::filesystem::path& path, std::string_view content);
// The bytes of `path`; none when it cannot be read.
std::optional<std::string> read_whole(const std::filesystem::path& path);

}  // namespace arbiter::batch
