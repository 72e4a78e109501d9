// The access log's cost per line (issue 17), in-process: the line formatted
// into a reused buffer (what AccessLogObserver does per request), and the
// same plus the copy into the batched writer (its writer thread writing to
// /dev/null meanwhile). The record is the one bench/overhead.sh's gateway
// logs: anonymous tenant, one model, a 1 KB request answered whole.
//   build/bench/access_log_bench
#include <benchmark/benchmark.h>

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

void BM_AccessLog_FormatLine(benchmark::State& state) {
  AccessRecord r = typical_record();
  fmt::memory_buffer line;
  int64_t i = 0;
  for (auto _ : state) {
    advance(r, ++i, state.range(0));
    line.clear();
    append_access_line(r, line);
    benchmark::DoNotOptimize(line.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(line.size()));
}
BENCHMARK(BM_AccessLog_FormatLine)->Arg(1'000)->Arg(1)->ArgName("lines_per_s");

// Strings that need escaping: the slow path, for comparison.
void BM_AccessLog_FormatLineWithEscapes(benchmark::State& state) {
  AccessRecord r = typical_record();
  r.request_id = "client \"id\"\twith\\escapes";
  r.error = "upstream said \"no\"\n";
  fmt::memory_buffer line;
  int64_t i = 0;
  for (auto _ : state) {
    advance(r, ++i, 1'000);
    line.clear();
    append_access_line(r, line);
    benchmark::DoNotOptimize(line.data());
  }
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

}  // namespace
}  // namespace arbiter
