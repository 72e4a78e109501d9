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

#include "core/batch/list_page.hpp"

namespace arbiter::batch {

namespace fs = std::filesystem;

boost::json::object to_api(const FileInfo& file) {
  return {{"id", file.id},         {"object", "file"},         {"bytes", file.bytes},
          {"created_at", file.created_at}, {"filename", file.filename}, {"purpose", file.purpose},
          {"status", "processed"}, {"expires_at", nullptr},    {"status_details", nullptr}};
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

std::string record_text(const FileInfo& f) {
  boost::json::object o = to_api(f);
  o["tenant"] = f.tenant;
  return boost::json::serialize(o);
}

std::optional<FileInfo> record_of(std::string_view text) {
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

std::expected<std::unique_ptr<FileStore>, std::string> FileStore::open(fs::path dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return std::unexpected(dir.string() + ": " + ec.message());
  std::unique_ptr<FileStore> store(new FileStore(dir));
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() != ".json") continue;
    const auto text = read_whole(p);
    const auto info = text ? record_of(*text) : std::nullopt;
    // A record without its bytes (a crash between the two renames): gone.
    if (info && fs::exists(dir / info->id)) {
      store->files_.emplace(info->id, Kept{.info = *info});
    }
  }
  if (ec) return std::unexpected(dir.string() + ": " + ec.message());
  return store;
}

std::expected<FileInfo, std::string> FileStore::record(FileInfo info) {
  if (auto why = write_whole(dir_ / (info.id + ".json"), record_text(info))) return std::unexpected(*why);
  std::lock_guard lock(mu_);
  files_.emplace(info.id, Kept{.info = info, .seq = ++made_});
  return info;
}

std::expected<FileInfo, std::string> FileStore::add(std::string_view tenant, std::string_view filename,
                                                    std::string_view purpose, std::string_view content) {
  FileInfo info{.id = random_id("file-"), .tenant = std::string(tenant), .filename = std::string(filename),
                .purpose = std::string(purpose), .bytes = content.size(), .created_at = unix_seconds()};
  if (auto why = write_whole(dir_ / info.id, content)) return std::unexpected(*why);
  return record(std::move(info));
}

std::expected<FileInfo, std::string> FileStore::adopt(std::string_view id, std::string_view tenant,
                                                      std::string_view filename, std::string_view purpose,
                                                      const fs::path& path) {
  if (auto held = find(tenant, id)) return *held;
  std::error_code ec;
  // Moved in before a crash kept its record from being written: moved already.
  const fs::path from = !fs::exists(path) && fs::exists(dir_ / std::string(id)) ? dir_ / std::string(id) : path;
  const auto bytes = fs::file_size(from, ec);
  if (ec) return std::unexpected(path.string() + ": " + ec.message());
  FileInfo info{.id = std::string(id), .tenant = std::string(tenant), .filename = std::string(filename),
                .purpose = std::string(purpose), .bytes = bytes, .created_at = unix_seconds()};
  if (from == path) fs::rename(path, dir_ / info.id, ec);
  if (ec) return std::unexpected(path.string() + ": " + ec.message());
  return record(std::move(info));
}

std::optional<FileInfo> FileStore::find(std::string_view tenant, std::string_view id) const {
  std::lock_guard lock(mu_);
  const auto it = files_.find(id);
  if (it == files_.end() || it->second.info.tenant != tenant) return std::nullopt;
  return it->second.info;
}

std::optional<std::string> FileStore::content(std::string_view tenant, std::string_view id) const {
  if (!find(tenant, id)) return std::nullopt;
  return read_whole(dir_ / std::string(id));
}

std::vector<FileInfo> FileStore::list(std::string_view tenant, std::string_view purpose, std::string_view after,
                                      std::size_t limit, bool oldest_first, bool& more) const {
  std::vector<Kept> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, f] : files_) {
      if (f.info.tenant == tenant && (purpose.empty() || f.info.purpose == purpose)) all.push_back(f);
    }
  }
  std::sort(all.begin(), all.end(), [&](const Kept& a, const Kept& b) {
    const auto ka = std::pair(a.info.created_at, a.seq);
    const auto kb = std::pair(b.info.created_at, b.seq);
    return oldest_first ? ka < kb : ka > kb;
  });
  std::vector<FileInfo> page;
  for (Kept& f : page_after(std::move(all), after, limit, [](const Kept& f) -> const std::string& { return f.info.id; }, more)) {
    page.push_back(std::move(f.info));
  }
  return page;
}

bool FileStore::remove(std::string_view tenant, std::string_view id) {
  {
    std::lock_guard lock(mu_);
    const auto it = files_.find(id);
    if (it == files_.end() || it->second.info.tenant != tenant) return false;
    files_.erase(it);
  }
  std::error_code ec;
  fs::remove(dir_ / (std::string(id) + ".json"), ec);  // the record first: a crash leaves bytes, not a record
  fs::remove(dir_ / std::string(id), ec);
  return true;
}

}  // namespace arbiter::batch
