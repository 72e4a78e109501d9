#include "gateway/store/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/store/journal_format.hpp"

namespace arbiter::store {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kSegmentBytes = std::size_t{4} << 20;

std::string errno_text() { return std::strerror(errno); }

}  // namespace

std::expected<std::unique_ptr<Journal>, std::string> Journal::open(const std::string& dir, std::size_t max_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return std::unexpected("cannot create " + dir + ": " + ec.message());
  const std::string lock = dir + "/lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return std::unexpected("cannot open " + lock + ": " + errno_text());
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::unexpected(dir + " is in use by another gateway (one journal per process: give each its own store.path)");
  }
  std::unique_ptr<Journal> journal(new Journal(dir, max_bytes, fd));
  if (auto done = journal->read_existing(); !done) return std::unexpected(done.error());
  return journal;
}

Journal::~Journal() {
  for (Segment& s : segments_) close(s);
  ::close(lock_fd_);
}

void Journal::close(Segment& s) {
  if (s.base) ::munmap(s.base, s.size);
  s.base = nullptr;
}

std::expected<void, std::string> Journal::read_existing() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().extension() == ".seg") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // named by their first sequence number, zero-padded
  for (const fs::path& file : files) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return std::unexpected("cannot open " + file.string() + ": " + errno_text());
    const auto size = static_cast<std::size_t>(fs::file_size(file));
    void* base = size ? ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : nullptr;
    ::close(fd);
    if (base == MAP_FAILED) return std::unexpected("cannot map " + file.string() + ": " + errno_text());
    Segment s{.path = file.string(), .base = static_cast<char*>(base), .size = size, .used = 0, .last_seq = 0};
    for (const JournalRecord& r : read_records(std::string_view(s.base, s.size))) {
      recovered_.emplace_back(r.seq, r.payload);
      s.used = r.end;
      s.last_seq = r.seq;
    }
    bytes_ += size;
    segments_.push_back(std::move(s));
  }
  std::sort(recovered_.begin(), recovered_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return {};
}

bool Journal::start_segment(uint64_t first_seq, std::size_t at_least) {
  const std::size_t size = std::max(kSegmentBytes, at_least);
  if (bytes_ + size > max_bytes_) return false;
  const std::string path = fmt::format("{}/{:020}.seg", dir_, first_seq);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  // Zero-filled: a zero length ends the records.
  const bool sized = ::ftruncate(fd, static_cast<off_t>(size)) == 0;
  void* base = sized ? ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (base == MAP_FAILED) {
    ::unlink(path.c_str());
    return false;
  }
  segments_.push_back({.path = path, .base = static_cast<char*>(base), .size = size, .used = 0, .last_seq = 0});
  bytes_ += size;
  appending_ = true;
  return true;
}

std::optional<std::string_view> Journal::append(uint64_t seq, std::string_view payload) {
  const std::size_t need = record_size(payload.size());
  if (!appending_ || segments_.back().size - segments_.back().used < need) {
    if (!start_segment(seq, need)) return std::nullopt;
  }
  Segment& s = segments_.back();
  write_record(std::span<char>(s.base + s.used, need), seq, payload);
  const std::string_view copy(s.base + s.used + kRecordHeader, payload.size());
  s.used += need;
  s.last_seq = seq;
  return copy;
}

void Journal::release_through(uint64_t seq) {
  // The segment being appended to stays (its space is still to be used).
  const std::size_t keep_last = appending_ ? 1 : 0;
  std::size_t gone = 0;
  while (gone + keep_last < segments_.size() && segments_[gone].last_seq <= seq) ++gone;
  for (std::size_t i = 0; i < gone; ++i) {
    close(segments_[i]);
    ::unlink(segments_[i].path.c_str());
    bytes_ -= segments_[i].size;
  }
  segments_.erase(segments_.begin(), segments_.begin() + static_cast<std::ptrdiff_t>(gone));
}

}  // namespace arbiter::store
