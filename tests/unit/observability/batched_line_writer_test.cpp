// The access log's writer: lines reach the destination in batches, by size,
// by time and at the end; a writer that falls behind drops (and counts)
// lines instead of blocking the caller; a reopen starts a new file.
#include "observability/batched_line_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "support/temp_dir.hpp"

namespace arbiter {
namespace {

using namespace std::chrono_literals;
using test::read_file;
using test::TempDir;

constexpr auto kNever = std::chrono::hours(1);  // no timed flush within a test

std::unique_ptr<BatchedLineWriter> open_writer(BatchedLineOptions options) {
  auto w = BatchedLineWriter::open(std::move(options));
  EXPECT_TRUE(w.has_value()) << w.error();
  return std::move(*w);
}

std::string numbered(int i) { return "{\"line\":" + std::to_string(i) + "}\n"; }

std::string numbered_lines(int from, int to) {
  std::string out;
  for (int i = from; i < to; ++i) out += numbered(i);
  return out;
}

// Polls `path` until it holds `want` (a liveness bound, not a timing check).
bool eventually_holds(const std::string& path, const std::string& want) {
  for (int i = 0; i < 1000; ++i) {
    if (read_file(path) == want) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(BatchedLineWriter, LinesWaitInTheBufferAndAreAllWrittenAtTheEnd) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  auto writer = open_writer({.file = path, .flush_every = kNever, .flush_bytes = 1 << 20});
  for (int i = 0; i < 1000; ++i) writer->append(numbered(i));
  EXPECT_EQ(read_file(path), "") << "written before the size or time mark";
  writer.reset();
  EXPECT_EQ(read_file(path), numbered_lines(0, 1000));
}

TEST(BatchedLineWriter, ABufferPastTheSizeMarkIsWrittenWithoutWaitingForTheTimer) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  auto writer = open_writer({.file = path, .flush_every = kNever, .flush_bytes = 1000});
  const std::string lines = numbered_lines(0, 100);  // past 1000 bytes
  writer->flush();  // returns with the writer asleep: only the appends can wake it
  for (int i = 0; i < 100; ++i) writer->append(numbered(i));
  // The lines up to the mark at least; what came after may wait for the next.
  std::string written;
  for (int i = 0; i < 1000 && written.size() < 1000; ++i) {
    std::this_thread::sleep_for(10ms);
    written = read_file(path);
  }
  EXPECT_GE(written.size(), 1000u);
  EXPECT_TRUE(lines.starts_with(written)) << written;
}

TEST(BatchedLineWriter, AFewLinesAreWrittenWhenTheFlushIntervalPasses) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  auto writer = open_writer({.file = path, .flush_every = 20ms, .flush_bytes = 1 << 20});
  writer->append(numbered(1));
  EXPECT_TRUE(eventually_holds(path, numbered(1)));
}

TEST(BatchedLineWriter, AWriterThatFallsBehindDropsAndCountsLinesAndNeverBlocksTheCaller) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_GT(::fcntl(fds[1], F_SETPIPE_SZ, 4096), 0);  // one page: full after 4 KiB
  // The writer's destination is stdout: point it at the pipe for the test.
  std::fflush(stdout);
  const int saved_stdout = ::dup(STDOUT_FILENO);
  ASSERT_EQ(::dup2(fds[1], STDOUT_FILENO), STDOUT_FILENO);
  ::close(fds[1]);

  constexpr int kLines = 2000;  // ~28 KB: far more than the pipe, the batch and the buffer hold
  auto writer = open_writer({.flush_every = kNever, .flush_bytes = 512, .max_buffered = 2048});
  for (int i = 0; i < kLines; ++i) writer->append(numbered(i));  // nobody reads: returns all the same
  EXPECT_GT(writer->dropped(), 0u);

  // Read what got through while the writer finishes.
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  });
  const uint64_t dropped = writer->dropped();
  writer.reset();
  ::dup2(saved_stdout, STDOUT_FILENO);  // the pipe's last write end closes: the reader sees EOF
  ::close(saved_stdout);
  reader.join();
  ::close(fds[0]);

  // Whole lines only, in order, and each line either written or counted.
  const auto written = static_cast<uint64_t>(std::ranges::count(got, '\n'));
  EXPECT_EQ(written + dropped, static_cast<uint64_t>(kLines));
  EXPECT_TRUE(got.ends_with("}\n"));
  int last = -1;
  for (std::size_t pos = 0; pos < got.size();) {
    const std::size_t end = got.find('\n', pos);
    const std::string line = got.substr(pos, end - pos);
    ASSERT_TRUE(line.starts_with("{\"line\":") && line.ends_with("}")) << line;
    const int n = std::stoi(line.substr(8));
    EXPECT_GT(n, last);
    last = n;
    pos = end + 1;
  }
}

TEST(BatchedLineWriter, AReopenSendsLaterLinesToANewFileAndLosesNone) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  auto writer = open_writer({.file = path, .flush_every = kNever, .flush_bytes = 1 << 20});
  for (int i = 0; i < 10; ++i) writer->append(numbered(i));
  ASSERT_EQ(std::rename(path.c_str(), dir.file("access.log.1").c_str()), 0);  // logrotate
  writer->reopen();
  writer->flush();
  for (int i = 10; i < 15; ++i) writer->append(numbered(i));
  writer.reset();
  EXPECT_EQ(read_file(dir.file("access.log.1")), numbered_lines(0, 10));
  EXPECT_EQ(read_file(path), numbered_lines(10, 15));
}

TEST(BatchedLineWriter, AFileThatCannotBeOpenedIsAnError) {
  const auto writer = BatchedLineWriter::open({.file = "/nonexistent-dir/access.log"});
  ASSERT_FALSE(writer.has_value());
  EXPECT_NE(writer.error().find("/nonexistent-dir/access.log"), std::string::npos) << writer.error();
}

}  // namespace
}  // namespace arbiter
