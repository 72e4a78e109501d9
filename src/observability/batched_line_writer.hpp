// Lines written in batches by one writer thread, off the request path: the
// access log's destination. A request thread copies its line into a shared
// buffer under a mutex held only for that copy; the writer thread swaps the
// buffer out and write(2)s it whole when it holds `flush_bytes` or every
// `flush_every`, whichever comes first. Memory is bounded: while the writer
// falls behind (a full pipe, a slow disk), lines past `max_buffered` are
// dropped and counted, and the request thread never waits for I/O. On
// destruction everything buffered is written. A file destination is reopened
// on request (SIGUSR1 after logrotate renamed it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "observability/metrics_registry.hpp"

namespace arbiter {

struct BatchedLineOptions {
  std::string file;  // appended to (created 0640); empty: stdout
  std::chrono::milliseconds flush_every{100};
  std::size_t flush_bytes = 64 * 1024;       // the writer is woken once this much is buffered
  std::size_t max_buffered = 4 * 1024 * 1024;  // past this, lines are dropped
};

class BatchedLineWriter {
 public:
  // Opens the destination and starts the writer thread; the error names the
  // file and why it could not be opened.
  static std::expected<std::unique_ptr<BatchedLineWriter>, std::string> open(BatchedLineOptions options);
  ~BatchedLineWriter();  // writes everything appended, then stops the thread
  BatchedLineWriter(const BatchedLineWriter&) = delete;
  BatchedLineWriter& operator=(const BatchedLineWriter&) = delete;

  // One or more complete lines, each ending in '\n'. Copies them into the
  // buffer, or drops them (counted) when the buffer is at its bound.
  void append(std::string_view lines);
  // The file is reopened by its name at the writer's next pass; what was
  // buffered before goes to the old file. No-op for stdout.
  void reopen();
  // Returns once everything appended before the call (and a reopen asked
  // before it) has been written.
  void flush();
  // Lines dropped so far: the buffer at its bound, or a write that failed.
  uint64_t dropped() const { return dropped_.value(); }

 private:
  BatchedLineWriter(BatchedLineOptions options, int fd);
  void run();
  // What each of the two buffers (pending_, run's batch) is given: room for
  // a batch and the lines that come while it is written.
  std::size_t buffer_bytes() const { return 2 * options_.flush_bytes; }
  // Writes `batch` whole (retrying short writes); counts the lines a failed
  // write lost.
  void write_batch(std::string_view batch);
  void reopen_file();

  const BatchedLineOptions options_;
  int fd_;  // owned unless it is stdout; touched only by the writer thread after open
  metrics::Counter dropped_;

  std::mutex mutex_;
  std::condition_variable wake_;     // the writer: data, a reopen, a flush or stop
  std::condition_variable written_;  // flush(): a pass finished
  std::string pending_;              // appended since the writer's last pass
  bool reopen_wanted_ = false;
  bool stopping_ = false;
  uint64_t flushes_wanted_ = 0;      // flush() calls so far
  uint64_t flushes_done_ = 0;        // of those, covered by a finished pass
  bool failing_ = false;             // the last write failed (reported once per run of failures)

  std::thread thread_;  // last: started once everything above is set
};

}  // namespace arbiter
