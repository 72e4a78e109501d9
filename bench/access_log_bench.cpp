// The access log's cost per line (issue 17), in-process: the line formatted
// into a reused buffer (what AccessLogObserver does per request), the same
// plus the copy into the batched writer (its writer thread writing to
// /dev/null meanwhile), and the writer thread's share: one write(2) of a
// 64 KiB batch to a file (kernel time included: CPU time is the thread's).
// The record is the one bench/overhead.sh's gateway logs: anonymous tenant,
// one model, a 1 KB request answered whole.
//   build/bench/access_log_bench
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "observability/access_log.hpp"
#include "observability/batched_line_writer.hpp"

namespace arbiter {
namespace {

using namespace std::chrono;

AccessRecord typical_record() {
  return {.ts = system_clock::now(), .request_id = "3f9c2a7b81d04e65", .tenant = "anonymous",
          .team = "anonymous", .cls = "default", .model = "m1", .backend = "upstream",
          .route = "/v1/chat/completions", .status = 200, .bytes_in = 1043, .bytes_out = 612,
          .queue_ms = 0.004, .prompt_tokens = 212, .completion_tokens = 16, .cached_tokens = 0,
          .engine_ms = 0.187, .upstream_ms = 0.171, .ttfb_ms = 0.203, .duration_ms = 0.251};
}

// Each line a little later, as a request stream's are: the timestamp moves
// to a new second once per `per_second` lines.
void advance(AccessRecord& r, int64_t i, int64_t per_second) {
  r.ts += nanoseconds(1'000'000'000 / per_second);
  r.duration_ms = 0.25 + static_cast<double>(i % 97) * 0.001;
}

// Formats `r` once an iteration, a little later each time.
void format_lines(benchmark::State& state, AccessRecord r, int64_t per_second) {
  fmt::memory_buffer line;
  int64_t i = 0;
  for (auto _ : state) {
    advance(r, ++i, per_second);
    line.clear();
    append_access_line(r, line);
    benchmark::DoNotOptimize(line.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(line.size()));
}

void BM_AccessLog_FormatLine(benchmark::State& state) { format_lines(state, typical_record(), state.range(0)); }
BENCHMARK(BM_AccessLog_FormatLine)->Arg(1'000)->Arg(1)->ArgName("lines_per_s");

// Strings that need escaping: the slow path, for comparison.
void BM_AccessLog_FormatLineWithEscapes(benchmark::State& state) {
  AccessRecord r = typical_record();
  r.request_id = "client \"id\"\twith\\escapes";
  r.error = "upstream said \"no\"\n";
  format_lines(state, std::move(r), 1'000);
}
BENCHMARK(BM_AccessLog_FormatLineWithEscapes);

// The observer's whole per-request work: format, then copy into the
// batched writer's buffer under its mutex.
void BM_AccessLog_FormatAndAppend(benchmark::State& state) {
  auto writer = BatchedLineWriter::open({.file = "/dev/null", .max_buffered = std::size_t{256} << 20});
  if (!writer) {
    state.SkipWithError(writer.error().c_str());
    return;
  }
  AccessRecord r = typical_record();
  fmt::memory_buffer line;
  int64_t i = 0;
  for (auto _ : state) {
    advance(r, ++i, 1'000);
    line.clear();
    append_access_line(r, line);
    (*writer)->append({line.data(), line.size()});
  }
  state.counters["dropped"] = static_cast<double>((*writer)->dropped());
}
BENCHMARK(BM_AccessLog_FormatAndAppend);

// One batch as the writer thread writes it: 64 KiB of lines appended to a
// file (in TMPDIR, /tmp by default; truncated now and then, untimed).
// items/s are lines.
void BM_AccessLog_WriteBatch(benchmark::State& state) {
  fmt::memory_buffer line;
  append_access_line(typical_record(), line);
  std::string batch;
  while (batch.size() + line.size() <= 64 * 1024) batch.append(line.data(), line.size());
  const int64_t lines = static_cast<int64_t>(batch.size() / line.size());
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/access_log_bench.XXXXXX";
  std::string name = path;
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    state.SkipWithError("cannot create a file in TMPDIR");
    return;
  }
  ::unlink(name.c_str());
  ::fcntl(fd, F_SETFL, O_APPEND);
  int64_t written = 0;
  for (auto _ : state) {
    if (::write(fd, batch.data(), batch.size()) != static_cast<ssize_t>(batch.size())) {
      state.SkipWithError("short write");
      break;
    }
    if (++written % 1024 == 0) {  // 64 MiB: start the file again
      state.PauseTiming();
      if (::ftruncate(fd, 0) != 0) state.SkipWithError("cannot truncate");
      state.ResumeTiming();
    }
  }
  ::close(fd);
  state.SetItemsProcessed(state.iterations() * lines);
  state.counters["lines_per_batch"] = static_cast<double>(lines);
}
BENCHMARK(BM_AccessLog_WriteBatch);

}  // namespace
}  // namespace arbiter
