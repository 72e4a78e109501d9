#include "gateway/batch/file_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <boost/json.hpp>


namespace arbiter::batch {

namespace fs = std::filesystem;

boost::json::object to_api(const FileInfo& file) {
  return {{"id", file.id},         {"object", "file"},         {"bytes", file.bytes},
          {"created_at", file.created_at}, {"filename", file.filename}, {"purpose", file.purpose},
          {"status", "processed"}, {"expires_at", file.expires_at > 0 ? boost::json::value(file.expires_at) : nullptr},
          {"status_details", nullptr}};
}

std::string random_id(std::string_view prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  for (int i = 0; i < 24; ++i) id.push_back(kHex[rng() & 0xf]);
  return id;
}

std::optional<std::string> write_whole(const fs::path& path, std::string_view content) {
  const fs::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return tmp.string() + ": " + std::strerror(errno);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = tmp.string() + ": " + std::strerror(errno);
      ::close(fd);
      return why;
    }
    done += static_cast<std::size_t>(n);
  }
  ::fsync(fd);  // whole on disk before it takes the name
  ::close(fd);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return path.string() + ": " + ec.message();
  return std::nullopt;
}

std::optional<std::string> read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return std::move(out).str();
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

// A file's record as an earlier version kept it beside its bytes (<id>.json).
std::optional<FileInfo> folder_record(std::string_view text) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  auto str = [&](std::string_view k) {
    const auto* x = o.if_contains(k);
    return x && x->is_string() ? std::string(x->get_string()) : std::string();
  };
  auto num = [&](std::string_view k) -> int64_t {
    const auto* x = o.if_contains(k);
    return x && (x->is_int64() || x->is_uint64()) ? x->to_number<int64_t>() : 0;
  };
  FileInfo f{.id = str("id"), .tenant = str("tenant"), .filename = str("filename"), .purpose = str("purpose"),
             .bytes = static_cast<uint64_t>(num("bytes")), .created_at = num("created_at")};
  if (f.id.empty()) return std::nullopt;
  return f;
}

}  // namespace

std::expected<std::unique_ptr<FileStore>, std::string> FileStore::open(fs::path dir, BatchRecords& records,
                                                                       UnixClock now) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return std::unexpected(dir.string() + ": " + ec.message());
  // Records an earlier version kept in the folder move to the database.
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() != ".json") continue;
    const auto text = read_whole(p);
    const auto info = text ? folder_record(*text) : std::nullopt;
    if (info && fs::exists(dir / info->id)) {
      if (auto added = records.add_file(*info); !added) return std::unexpected(added.error());
    }
    fs::remove(p, ec);
  }
  return std::unique_ptr<FileStore>(new FileStore(std::move(dir), records, std::move(now)));
}

std::expected<FileInfo, std::string> FileStore::add(std::string_view tenant, std::string_view filename,
                                                    std::string_view purpose, std::string_view content,
                                                    int64_t expires_after) {
  const int64_t now = now_();
  FileInfo info{.id = random_id("file-"), .tenant = std::string(tenant), .filename = std::string(filename),
                .purpose = std::string(purpose), .bytes = content.size(), .created_at = now,
                .expires_at = expires_after > 0 ? now + expires_after : 0};
  if (auto why = write_whole(dir_ / info.id, content)) return std::unexpected(*why);
  if (auto added = records_.add_file(info); !added) return std::unexpected(added.error());
  return info;
}

std::expected<FileInfo, std::string> FileStore::adopt(std::string_view id, std::string_view tenant,
                                                      std::string_view filename, std::string_view purpose,
                                                      const fs::path& path, int64_t expires_after) {
  auto held = find(tenant, id);
  if (!held) return std::unexpected(held.error());
  if (*held) return **held;
  std::error_code ec;
  // Moved in before a crash kept its row from being written: moved already.
  const fs::path into = dir_ / std::string(id);
  const fs::path from = !fs::exists(path) && fs::exists(into) ? into : path;
  const auto bytes = fs::file_size(from, ec);
  if (ec) return std::unexpected(path.string() + ": " + ec.message());
  const int64_t now = now_();
  FileInfo info{.id = std::string(id), .tenant = std::string(tenant), .filename = std::string(filename),
                .purpose = std::string(purpose), .bytes = bytes, .created_at = now,
                .expires_at = expires_after > 0 ? now + expires_after : 0};
  if (from == path) fs::rename(path, into, ec);
  if (ec) return std::unexpected(path.string() + ": " + ec.message());
  if (auto added = records_.add_file(info); !added) return std::unexpected(added.error());
  return info;
}

std::expected<std::optional<FileInfo>, std::string> FileStore::find(std::string_view tenant, std::string_view id) {
  return records_.file(tenant, id);
}

std::expected<std::optional<std::string>, std::string> FileStore::content(std::string_view tenant,
                                                                          std::string_view id) {
  auto info = find(tenant, id);
  if (!info) return std::unexpected(info.error());
  if (!*info) return std::nullopt;
  return bytes(**info);
}

std::expected<std::string, std::string> FileStore::bytes(const FileInfo& file) const {
  auto text = read_whole(dir_ / file.id);
  if (!text) {
    return std::unexpected("the bytes of file '" + file.id + "' are not in " + dir_.string() +
                           " (replicas must share batches.dir)");
  }
  return std::move(*text);
}

std::expected<std::vector<FileInfo>, std::string> FileStore::list(std::string_view tenant, std::string_view purpose,
                                                                  std::string_view after, std::size_t limit,
                                                                  bool oldest_first, bool& more) {
  return records_.files(tenant, purpose, after, limit, oldest_first, more);
}

std::expected<bool, std::string> FileStore::remove(std::string_view tenant, std::string_view id) {
  auto removed = records_.remove_file(tenant, id);  // the row first: a crash leaves bytes, not a row
  if (!removed || !*removed) return removed;
  std::error_code ec;
  fs::remove(dir_ / std::string(id), ec);
  return true;
}

std::expected<std::size_t, std::string> FileStore::expire(int64_t now) {
  auto gone = records_.expire_files(now);  // the rows first, as remove()
  if (!gone) return std::unexpected(gone.error());
  std::error_code ec;
  for (const std::string& id : *gone) fs::remove(dir_ / id, ec);
  return gone->size();
}

}  // namespace arbiter::batch
