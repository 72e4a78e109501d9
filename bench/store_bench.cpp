// The usage and audit store's cost (issue 46), in-process, on a SQLite file
// in a temporary folder:
// - BM_StoreAddPerRequest: what a request's StoreObserver hands over (a
//   usage row and a `dispatched` audit row) through StoreWriter::add:
//   encode, journal, queue; the writer thread writing meanwhile. CPU time
//   of the calling thread per request.
// - BM_StoreRowsEndToEnd/0 and /1: a request's usage row alone, and with
//   its audit row, through the writer into SQLite: the process's CPU time
//   per request, both threads (the difference is what the audit costs).
// - BM_SqliteWrite: SqliteStore::write of batches of 5,000 rows (half usage,
//   half audit, chained): the rows a second the writer sustains.
// - BM_PostgresWrite: the same through PostgresStore, to the server named by
//   ARBITER_BENCH_POSTGRES_URL (skipped without it; bench/postgres_store.sh
//   starts one on loopback and runs it).
//   build/bench/store_bench
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <span>
#include <string>

#include "gateway/store/postgres_store.hpp"
#include "gateway/store/sqlite_store.hpp"
#include "gateway/store/store_writer.hpp"

namespace arbiter {
namespace {

std::string temp_dir() {
  char pattern[] = "/tmp/arbiter-store-bench.XXXXXX";
  return ::mkdtemp(pattern);
}

store::UsageRow usage_row(int64_t i) {
  return {.ts_ms = 1'796'600'000'000 + i, .request_id = "3f9c2a7b81d04e65", .tenant = "alpha", .team = "ml",
          .model = "llama-3.1-8b-instruct", .klass = "chat", .status = 200, .prompt_tokens = 212,
          .completion_tokens = 16, .cached_tokens = 0, .engine_ms = 0.187, .cost = 0.0000421, .tokens_from = "engine"};
}

store::AuditRow audit_row(int64_t i) {
  return {.ts_ms = 1'796'600'000'000 + i, .kind = "dispatched", .request_id = "3f9c2a7b81d04e65", .tenant = "alpha",
          .klass = "chat", .model = "llama-3.1-8b-instruct",
          .detail = "backend=vllm-chat-0 queue_ms=0.0 wait_reason=none status=200"};
}

// As StoreObserver does: a request's rows (its usage; with `audit`, its
// `dispatched` decision) encoded into one reused buffer, handed over together.
void add_request_rows(StoreWriter& writer, int64_t i, bool audit, std::string& bytes) {
  bytes.clear();
  const store::UsageRow u = usage_row(i);
  store::encode_into(bytes, store::UsageView{.ts_ms = u.ts_ms, .request_id = u.request_id, .tenant = u.tenant,
                                             .team = u.team, .model = u.model, .klass = u.klass, .status = u.status,
                                             .prompt_tokens = u.prompt_tokens,
                                             .completion_tokens = u.completion_tokens,
                                             .cached_tokens = u.cached_tokens, .engine_ms = u.engine_ms,
                                             .cost = u.cost, .tokens_from = u.tokens_from});
  const std::size_t first = bytes.size();
  if (audit) {
    const store::AuditRow a = audit_row(i);
    store::encode_into(bytes, store::AuditView{.ts_ms = a.ts_ms, .kind = a.kind, .request_id = a.request_id,
                                               .tenant = a.tenant, .klass = a.klass, .model = a.model,
                                               .detail = a.detail});
  }
  const std::string_view rows[] = {std::string_view(bytes).substr(0, first), std::string_view(bytes).substr(first)};
  writer.add(std::span(rows, audit ? 2 : 1));
}

std::unique_ptr<StoreWriter> started_writer(benchmark::State& state, const std::string& dir) {
  StoreConfig settings;
  settings.path = dir + "/usage.db";
  settings.spool_bytes = std::size_t{2} << 30;
  auto writer = StoreWriter::open(settings);
  if (!writer) {
    state.SkipWithError(writer.error().c_str());
    return nullptr;
  }
  (*writer)->start();
  return std::move(*writer);
}

void BM_StoreAddPerRequest(benchmark::State& state) {
  const std::string dir = temp_dir();
  auto writer = started_writer(state, dir);
  if (!writer) return;
  int64_t i = 0;
  std::string bytes;
  for (auto _ : state) add_request_rows(*writer, i++, true, bytes);
  state.SetItemsProcessed(state.iterations());
  writer->stop();
  state.counters["dropped"] = static_cast<double>(writer->state().dropped);
  writer.reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_StoreAddPerRequest)->Iterations(200'000)->Unit(benchmark::kNanosecond);

// What the audit trail costs a request in CPU, all of it: the request's
// thread (encode, journal, queue) and the writer's (decode, the batch's
// JSON and hash, SQLite) for a request's usage row alone (arg 0) and with
// its `dispatched` decision (arg 1): process CPU time per request, the
// last batch written inside the timing. Arg 1 less arg 0 is what
// `store.audit` adds (issue 46: at most 1 us).
void BM_StoreRowsEndToEnd(benchmark::State& state) {
  const bool audit = state.range(0) != 0;
  const std::string dir = temp_dir();
  auto writer = started_writer(state, dir);
  if (!writer) return;
  int64_t i = 0;
  std::string bytes;
  const auto used = [] {
    rusage r{};
    ::getrusage(RUSAGE_SELF, &r);
    const auto us = [](const timeval& t) { return 1e6 * static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec); };
    return std::pair{us(r.ru_utime), us(r.ru_stime)};
  };
  const auto before = used();
  for (auto _ : state) {
    add_request_rows(*writer, i++, audit, bytes);
    if (i == static_cast<int64_t>(state.max_iterations)) writer->stop();  // the last rows written, timed
  }
  const auto after = used();
  state.SetItemsProcessed(state.iterations());
  // The process's CPU split: user space (what instruction counts measure)
  // and the kernel's (the database file's writes, page faults).
  const auto n = static_cast<double>(state.iterations());
  state.counters["user_us"] = (after.first - before.first) / n;
  state.counters["sys_us"] = (after.second - before.second) / n;
  state.counters["written"] =
      static_cast<double>(writer->state().usage_written + writer->state().audit_written);
  writer.reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_StoreRowsEndToEnd)
    ->Arg(0)
    ->Arg(1)
    ->Iterations(300'000)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kNanosecond);

// Batches of 5,000 rows, half usage, half audit, into `db`.
void write_batches(benchmark::State& state, store::Database& db) {
  uint64_t seq = 0;
  const store::UsageRow u = usage_row(0);
  const store::AuditRow a = audit_row(0);
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<std::pair<uint64_t, store::RowView>> batch;
    batch.reserve(5'000);
    for (int r = 0; r < 5'000; ++r) {
      ++seq;
      if (r % 2) {
        batch.emplace_back(seq, store::UsageView{.ts_ms = static_cast<int64_t>(seq), .request_id = u.request_id,
                                                 .tenant = u.tenant, .team = u.team, .model = u.model,
                                                 .klass = u.klass, .status = u.status,
                                                 .prompt_tokens = u.prompt_tokens,
                                                 .completion_tokens = u.completion_tokens, .cached_tokens = 0,
                                                 .engine_ms = u.engine_ms, .cost = u.cost,
                                                 .tokens_from = u.tokens_from});
      } else {
        store::AuditView view = store::view_of(a);
        view.ts_ms = static_cast<int64_t>(seq);
        batch.emplace_back(seq, view);
      }
    }
    state.ResumeTiming();
    if (auto done = db.write(batch); !done) {
      state.SkipWithError(done.error().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * 5'000);
}

void BM_SqliteWrite(benchmark::State& state) {
  const std::string dir = temp_dir();
  auto db = store::SqliteStore::open(dir + "/usage.db", "bench");
  if (!db) {
    state.SkipWithError(db.error().c_str());
    return;
  }
  write_batches(state, **db);
  db->reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SqliteWrite)->Iterations(40)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PostgresWrite(benchmark::State& state) {
  const char* url = std::getenv("ARBITER_BENCH_POSTGRES_URL");
  if (url == nullptr || *url == '\0') {
    state.SkipWithError("ARBITER_BENCH_POSTGRES_URL is not set (bench/postgres_store.sh)");
    return;
  }
  // A replica name of its own each run: its rows start at sequence 1.
  auto db = store::PostgresStore::open(url, "bench-" + std::to_string(::getpid()));
  if (!db) {
    state.SkipWithError(db.error().c_str());
    return;
  }
  write_batches(state, **db);
}
BENCHMARK(BM_PostgresWrite)->Iterations(40)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace arbiter
