// The Batch API's jobs (/v1/batches; docs/batches.md): each one's record
// (core/batch/batch_job.hpp) in the usage store's database
// (batch_records.hpp), and the runner that turns
// its input file's lines into requests of the batch class, through the
// same request pipeline as any client's (gateway/batch/line_client.hpp):
// queued, scheduled, preempted and resumed like any background work,
// billed to the batch's tenant, its completion window as each line's
// start-by deadline. A line's answer is appended to the job's output (2xx)
// or error file the moment it ends, so after a crash or a restart a job
// resumes where it was: the lines whose answers are written are not run
// again. 429s and 503s (a quota, overload, draining) are tried again after
// their Retry-After until the window closes.
//
// Replicas sharing the store (PostgreSQL) and the folder share the jobs: a
// replica runs the jobs whose lease it holds, renews it every second
// (writing their progress), and claims those whose lease ran out
// (batches.takeover_s: their replica died or lost the store); any replica
// answers for any job, a cancel included. Lines run on one executor (the
// gateway's timer strand); the database is used on a worker thread of its
// own (on_worker), where the API's calls run too.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>
#include <boost/json/object.hpp>

#include "core/batch/batch_input.hpp"
#include "core/batch/batch_job.hpp"
#include "core/error.hpp"
#include "core/request_parser.hpp"
#include "gateway/batch/batch_records.hpp"
#include "gateway/batch/file_store.hpp"
#include "gateway/periodic.hpp"
#include "gateway/runtime.hpp"
#include "http/server.hpp"
#include "observability/metrics_registry.hpp"

namespace arbiter::batch {

class LineClient;

// The API's answer when the records' database or the files' folder could
// not answer (500, saying why).
ApiError store_error(const std::string& why);

class BatchBook {
 public:
  // Runs one request through the current generation's pipeline.
  using RunLine = std::function<Task<void>(Route, HttpRequest&, RequestClient&)>;
  // The configuration the next line reads (its class, the batch bounds).
  using CurrentRuntime = std::function<std::shared_ptr<const Runtime>()>;
  // Unix seconds: the jobs' times and their windows (injected for tests).
  using UnixClock = std::function<int64_t()>;

  // The files' bytes and the lines' answers in `dir` (made when missing),
  // the records in the usage store `store` names (its path resolved; off: a
  // SQLite file in `dir`); `replica`: this gateway's name in the jobs'
  // leases. Its metric families go to `registry`.
  static std::expected<std::unique_ptr<BatchBook>, std::string> open(std::filesystem::path dir,
                                                                     const StoreConfig& store, std::string replica,
                                                                     net::any_io_executor executor, RunLine run,
                                                                     CurrentRuntime runtime,
                                                                     metrics::Registry& registry,
                                                                     UnixClock now = unix_seconds);
  ~BatchBook();

  // Claims this replica's jobs not ended (and any whose lease ran out) and
  // resumes them; then again every second.
  void start();
  // Running lines stop (the engines' work with them) and are not written:
  // their jobs resume at the next start, here or on another replica. Any
  // thread.
  void stop();
  // stop(), then until every job's and line's coroutine has ended (or
  // `deadline`): a gateway's drain, so that none is left suspended when
  // its io_context stops (destroyed later, it would end a dispatcher slot
  // of a gateway already gone).
  Task<void> drain(std::chrono::milliseconds deadline);

  // `f()` on the worker thread, its result back on the caller's executor:
  // the database's calls, which may wait (PostgreSQL), never hold an I/O
  // thread or the lines' executor.
  template <class F>
  Task<std::invoke_result_t<F&>> on_worker(F f) {
    using R = std::invoke_result_t<F&>;
    co_return co_await net::co_spawn(worker_.get_executor(), call<R, F>(std::move(f)), net::use_awaitable);
  }

  // The API's calls (on the worker thread; any thread in tests). POST
  // /v1/batches from `tenant` (its name; `config` its settings, null for
  // the anonymous tenant): checked whole, then started.
  std::expected<Job, ApiError> create(std::string_view tenant, const TenantConfig* config,
                                      const boost::json::object& request);
  std::expected<std::optional<Job>, ApiError> find(std::string_view tenant, std::string_view id);
  // Newest first, after the job `after` (empty: from the newest); at most
  // `limit`; `more` says whether older ones are left.
  std::expected<std::vector<Job>, ApiError> list(std::string_view tenant, std::string_view after, std::size_t limit,
                                                 bool& more);
  std::expected<Job, ApiError> cancel(std::string_view tenant, std::string_view id);

  FileStore& files() { return *files_; }

 private:
  struct Entry;
  // docs/batches.md, "Metrics".
  struct Metrics {
    explicit Metrics(metrics::Registry& r);
    metrics::Counter& completed;  // lines answered 2xx
    metrics::Counter& failed;     // lines answered otherwise
    metrics::Counter& expired;    // lines not run before the window ended
    metrics::Counter& retried;    // 429s and 503s tried again
    metrics::Gauge& in_flight;    // lines in the pipeline or waiting to try again
    metrics::Gauge& running;      // jobs whose lines are running
    metrics::Counter& lease_failures;  // renewals the store did not answer
    metrics::Counter& lost;            // jobs whose lines stopped here: their lease ran out or was taken
  };

  BatchBook(std::filesystem::path dir, std::unique_ptr<BatchRecords> records, std::unique_ptr<FileStore> files,
            std::string replica, net::any_io_executor executor, RunLine run, CurrentRuntime runtime,
            metrics::Registry& registry, UnixClock now);
  template <class R, class F>
  static Task<R> call(F f) {
    co_return f();
  }
  // Reads the records an earlier version kept in the folder into the database.
  void import_folder_records();
  // Renews this replica's leases (writing its jobs' progress) and claims
  // jobs whose lease ran out: the jobs it holds run here, those it lost stop
  // here, cancels asked for on other replicas are taken up.
  Task<void> renew();
  // Deletes the files whose expires_at has come (every minute; whichever
  // replica gets to a file first).
  Task<void> expire_files();
  // A job held now: run it, unless it runs here already.
  void take(BatchRecords::Claimed claimed);
  Task<void> run_job(std::shared_ptr<Entry> e);
  Task<void> run_line(std::shared_ptr<Entry> e, InputLine line, std::size_t index);
  // Until something changes for the job's runner (a line ended, a cancel).
  Task<void> wait(Entry& e);
  // The job's lines stop where they are: those running leave the engine,
  // those waiting to try again wake, and so does its runner (executor only).
  static void halt(Entry& e);
  // The job is another replica's now: its lines stop, unwritten (executor only).
  void lose(Entry& e);
  // A cancel asked for on another replica, taken up here (executor only).
  void cancel_here(const std::shared_ptr<Entry>& e, int64_t cancel_at);
  // The job's runner is done with its lines (executor only).
  void leave_running(const std::shared_ptr<Entry>& e);
  // The runner has ended: the job leaves this replica's memory.
  void forget(const std::shared_ptr<Entry>& e);
  // Writes a line the window closed on to the error file.
  void expire_line(Entry& e, std::string_view custom_id);
  // Puts the output and error files in place and ends the job.
  Task<void> finalize(std::shared_ptr<Entry> e);
  // Ends the job as failed, saying why.
  Task<void> fail(std::shared_ptr<Entry> e, std::string why);
  // Writes the job's record; a job another replica took over is lost here.
  // Whether it was written.
  Task<bool> save(std::shared_ptr<Entry> e);
  // Appends one result or error line to the job's output (`ok`) or error file.
  void append(Entry& e, bool ok, const std::string& line);
  // The output (`ok`) or error file being written of job `id`.
  std::filesystem::path partial(std::string_view id, bool ok) const;
  void sweep_deadlines();

  std::filesystem::path dir_;  // the lines' answers being written: dir_/jobs
  std::unique_ptr<BatchRecords> records_;
  std::unique_ptr<FileStore> files_;
  std::string replica_;
  net::any_io_executor executor_;
  RunLine run_;
  CurrentRuntime runtime_;
  UnixClock now_;
  Periodic sweep_;
  Periodic leases_;
  Periodic expiry_;
  Metrics metrics_;

  mutable std::mutex mu_;  // jobs_ and every entry's job
  // The jobs this replica runs: an entry from its claim (or creation) until
  // its runner ends.
  std::map<std::string, std::shared_ptr<Entry>, std::less<>> jobs_;
  // On the executor only.
  std::vector<std::shared_ptr<Entry>> running_;
  std::chrono::steady_clock::time_point renewed_;  // the last claim that reached the database
  bool stopping_ = false;
  // run_job and run_line coroutines not yet ended (drain() waits for 0).
  std::atomic<int> active_{0};
  struct Active {
    explicit Active(std::atomic<int>& n) : count(n) { ++count; }
    ~Active() { --count; }
    std::atomic<int>& count;
  };
  // Last: joined (its queued calls done) before the rest goes.
  net::thread_pool worker_{1};
};

}  // namespace arbiter::batch
