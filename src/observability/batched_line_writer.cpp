#include "observability/batched_line_writer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "observability/event_log.hpp"

namespace arbiter {

namespace {

int open_for_append(const std::string& file) {
  return ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
}

uint64_t lines_in(std::string_view text) { return static_cast<uint64_t>(std::ranges::count(text, '\n')); }

}  // namespace

std::expected<std::unique_ptr<BatchedLineWriter>, std::string> BatchedLineWriter::open(BatchedLineOptions options) {
  int fd = STDOUT_FILENO;
  if (!options.file.empty()) {
    fd = open_for_append(options.file);
    if (fd < 0) return std::unexpected("cannot open " + options.file + ": " + std::strerror(errno));
  }
  return std::unique_ptr<BatchedLineWriter>(new BatchedLineWriter(std::move(options), fd));
}

BatchedLineWriter::BatchedLineWriter(BatchedLineOptions options, int fd)
    : options_(std::move(options)), fd_(fd) {
  pending_.reserve(buffer_bytes());
  thread_ = std::thread([this] { run(); });
}

BatchedLineWriter::~BatchedLineWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  if (fd_ != STDOUT_FILENO) ::close(fd_);
}

void BatchedLineWriter::append(std::string_view lines) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    const std::size_t before = pending_.size();
    if (before + lines.size() > options_.max_buffered) {
      dropped_.inc(lines_in(lines));
      return;
    }
    pending_.append(lines);
    // Only the append that crosses the mark wakes the writer: one wake-up
    // per batch, not per line.
    wake = before < options_.flush_bytes && pending_.size() >= options_.flush_bytes;
  }
  if (wake) wake_.notify_one();
}

void BatchedLineWriter::reopen() {
  {
    std::lock_guard lock(mutex_);
    reopen_wanted_ = true;
  }
  wake_.notify_one();
}

void BatchedLineWriter::flush() {
  std::unique_lock lock(mutex_);
  const uint64_t mine = ++flushes_wanted_;
  wake_.notify_one();
  written_.wait(lock, [&] { return flushes_done_ >= mine; });
}

void BatchedLineWriter::run() {
  // Not pending_.capacity(): read before the lock, it raced with the first
  // append (ThreadSanitizer).
  std::string batch;
  batch.reserve(buffer_bytes());
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, options_.flush_every, [&] {
      return stopping_ || reopen_wanted_ || flushes_wanted_ > flushes_done_ || pending_.size() >= options_.flush_bytes;
    });
    batch.swap(pending_);
    const bool reopen = std::exchange(reopen_wanted_, false);
    const uint64_t flushes = flushes_wanted_;
    const bool stop = stopping_;
    lock.unlock();
    write_batch(batch);
    batch.clear();
    if (reopen) reopen_file();
    lock.lock();
    flushes_done_ = flushes;
    written_.notify_all();
    if (stop && pending_.empty()) return;
  }
}

void BatchedLineWriter::write_batch(std::string_view batch) {
  std::size_t off = 0;
  while (off < batch.size()) {
    const auto n = ::write(fd_, batch.data() + off, batch.size() - off);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking stdout: wait for room
      pollfd p{.fd = fd_, .events = POLLOUT, .revents = 0};
      if (::poll(&p, 1, -1) >= 0 || errno == EINTR) continue;
    }
    // Gone for good (a closed pipe, a full disk): the rest of the batch is
    // lost; counted, and said once until a write succeeds again.
    if (!failing_) {
      log_event(EventLevel::kError, "access log write failed", {{"error", std::strerror(errno)}});
    }
    failing_ = true;
    dropped_.inc(lines_in(batch.substr(off)));
    return;
  }
  failing_ = false;
}

void BatchedLineWriter::reopen_file() {
  if (options_.file.empty()) return;
  const int fd = open_for_append(options_.file);
  if (fd < 0) {  // keep writing to the old file rather than lose lines
    log_event(EventLevel::kError, "access log reopen failed", {{"file", options_.file}, {"error", std::strerror(errno)}});
    return;
  }
  ::close(fd_);
  fd_ = fd;
}

}  // namespace arbiter
