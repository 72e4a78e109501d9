// The Batch API's jobs (/v1/batches; docs/batches.md): each one's record
// (core/batch/batch_job.hpp) in batches.dir/jobs, and the runner that turns
// its input file's lines into requests of the batch class, through the
// same request pipeline as any client's (gateway/batch/line_client.hpp):
// queued, scheduled, preempted and resumed like any background work,
// billed to the batch's tenant, its completion window as each line's
// start-by deadline. A line's answer is appended to the job's output (2xx)
// or error file the moment it ends, so after a crash or a restart a job
// resumes where it was: the lines whose answers are written are not run
// again. 429s and 503s (a quota, overload, draining) are tried again after
// their Retry-After until the window closes. Lines run on one executor
// (the gateway's timer strand); the API's calls come from any thread.
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

#include <boost/json/object.hpp>

#include "core/batch/batch_input.hpp"
#include "core/batch/batch_job.hpp"
#include "core/error.hpp"
#include "core/request_parser.hpp"
#include "gateway/batch/file_store.hpp"
#include "gateway/periodic.hpp"
#include "gateway/runtime.hpp"
#include "http/server.hpp"
#include "observability/metrics_registry.hpp"

namespace arbiter::batch {

class LineClient;

class BatchBook {
 public:
  // Runs one request through the current generation's pipeline.
  using RunLine = std::function<Task<void>(Route, HttpRequest&, RequestClient&)>;
  // The configuration the next line reads (its class, the batch bounds).
  using CurrentRuntime = std::function<std::shared_ptr<const Runtime>()>;
  // Unix seconds: the jobs' times and their windows (injected for tests).
  using UnixClock = std::function<int64_t()>;

  // Reads the files and jobs in `dir` (made when missing); its metric
  // families go to `registry`.
  static std::expected<std::unique_ptr<BatchBook>, std::string> open(std::filesystem::path dir,
                                                                     net::any_io_executor executor, RunLine run,
                                                                     CurrentRuntime runtime,
                                                                     metrics::Registry& registry,
                                                                     UnixClock now = unix_seconds);
  ~BatchBook();

  // Resumes every job that had not ended.
  void start();
  // Running lines stop (the engines' work with them) and are not written:
  // their jobs resume at the next start. Any thread.
  void stop();
  // stop(), then until every job's and line's coroutine has ended (or
  // `deadline`): a gateway's drain, so that none is left suspended when
  // its io_context stops (destroyed later, it would end a dispatcher slot
  // of a gateway already gone).
  Task<void> drain(std::chrono::milliseconds deadline);

  // POST /v1/batches from `tenant` (its name; `config` its settings, null
  // for the anonymous tenant): checked whole, then started.
  std::expected<Job, ApiError> create(std::string_view tenant, const TenantConfig* config,
                                      const boost::json::object& request);
  std::optional<Job> find(std::string_view tenant, std::string_view id) const;
  // Newest first, after the job `after` (empty: from the newest); at most
  // `limit`; `more` says whether older ones are left.
  std::vector<Job> list(std::string_view tenant, std::string_view after, std::size_t limit, bool& more) const;
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
  };

  BatchBook(std::filesystem::path dir, std::unique_ptr<FileStore> files, net::any_io_executor executor, RunLine run,
            CurrentRuntime runtime, metrics::Registry& registry, UnixClock now);
  Task<void> run_job(std::shared_ptr<Entry> e);
  Task<void> run_line(std::shared_ptr<Entry> e, InputLine line, std::size_t index);
  // Until something changes for the job's runner (a line ended, a cancel).
  Task<void> wait(Entry& e);
  // The job's lines stop where they are: those running leave the engine,
  // those waiting to try again wake, and so does its runner (executor only).
  static void halt(Entry& e);
  // The job's runner is done with its lines (executor only).
  void leave_running(const std::shared_ptr<Entry>& e);
  // Writes a line the window closed on to the error file.
  void expire_line(Entry& e, std::string_view custom_id);
  // Puts the output and error files in place and ends the job.
  void finalize(Entry& e);
  // Ends the job as failed, saying why.
  void fail(Entry& e, std::string why);
  // Appends one result or error line to the job's output (`ok`) or error file.
  void append(Entry& e, bool ok, const std::string& line);
  // The output (`ok`) or error file being written of job `id`.
  std::filesystem::path partial(std::string_view id, bool ok) const;
  // The job's record rewritten from its state (under mu_).
  void save_locked(const Job& job);
  void sweep_deadlines();

  std::filesystem::path dir_;  // jobs' records and partial files: dir_/jobs
  std::unique_ptr<FileStore> files_;
  net::any_io_executor executor_;
  RunLine run_;
  CurrentRuntime runtime_;
  UnixClock now_;
  Periodic sweep_;
  Metrics metrics_;

  mutable std::mutex mu_;  // jobs_ and every entry's job
  std::map<std::string, std::shared_ptr<Entry>, std::less<>> jobs_;
  uint64_t created_ = 0;  // jobs created by this process
  // On the executor only.
  std::vector<std::shared_ptr<Entry>> running_;
  bool stopping_ = false;
  // run_job and run_line coroutines not yet ended (drain() waits for 0).
  std::atomic<int> active_{0};
  struct Active {
    explicit Active(std::atomic<int>& n) : count(n) { ++count; }
    ~Active() { --count; }
    std::atomic<int>& count;
  };
};

}  // namespace arbiter::batch
