#include "gateway/batch/batch_book.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_set>

#include <boost/json.hpp>

#include "core/batch/batch_class.hpp"
#include "gateway/batch/line_client.hpp"
#include "observability/event_log.hpp"

namespace arbiter::batch {

namespace fs = std::filesystem;

struct BatchBook::Entry {
  Entry(Job j, net::any_io_executor executor) : job(std::move(j)), wake(executor) {}
  Job job;  // under mu_
  // On the executor only.
  net::steady_timer wake;               // the runner's wait: cancelled to wake it
  std::set<LineClient*> live;           // lines in the pipeline now
  std::set<net::steady_timer*> pauses;  // lines waiting to try again
  std::size_t in_flight = 0;
  bool cancelled = false;
  bool lost = false;           // another replica runs it now
  uint64_t saved_lines = 0;    // completed + failed when its record was last written
  int out_fd = -1;
  int err_fd = -1;
};

namespace {

constexpr auto kSweepEvery = std::chrono::milliseconds(100);
constexpr std::chrono::seconds kMaxPause{30};
constexpr auto kRenewEvery = std::chrono::seconds(1);
constexpr auto kExpireEvery = std::chrono::seconds(60);
// A line the window closed on: its text in the error file.
constexpr std::string_view kExpiredMessage = "This line could not be run before the batch's completion window ended.";

// The window's end (`unix_seconds`, `now` being now) on the steady clock
// the scheduler keeps deadlines on.
std::chrono::steady_clock::time_point steady_at(int64_t unix_seconds, int64_t now) {
  return std::chrono::steady_clock::now() + std::chrono::seconds(unix_seconds - now);
}

// The answers already written to a partial file (custom_ids), counted; a
// last line cut short by a crash is cut off.
std::size_t read_done(const fs::path& path, std::unordered_set<std::string>& done) {
  const auto text = read_whole(path);
  if (!text) return 0;
  std::size_t whole = text->rfind('\n');
  whole = whole == std::string::npos ? 0 : whole + 1;
  if (whole < text->size()) {
    std::error_code ec;
    fs::resize_file(path, whole, ec);
  }
  std::size_t count = 0;
  std::string_view rest(text->data(), whole);
  while (!rest.empty()) {
    const std::size_t eol = rest.find('\n');
    WrittenLine line = read_written_line(rest.substr(0, eol));
    rest.remove_prefix(eol + 1);
    if (!line.custom_id.empty() && done.insert(std::move(line.custom_id)).second) ++count;
  }
  return count;
}

// Whether an error file holds a line the window closed on.
bool has_expired_line(const fs::path& path) {
  const auto text = read_whole(path);
  std::string_view rest = text ? std::string_view(*text) : std::string_view();
  while (!rest.empty()) {
    const std::size_t eol = rest.find('\n');
    if (read_written_line(rest.substr(0, eol)).error_code == kExpiredCode) return true;
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
  }
  return false;
}

// A finalize's files: the output's and errors' ids (empty: none), and
// whether a line expired.
struct Ended {
  std::string output_file;
  std::string error_file;
  bool expired = false;
};

ApiError invalid(std::string message, std::string param = {}) {
  return ApiError{ErrorCode::kInvalidRequest, std::move(message),
                  param.empty() ? std::nullopt : std::optional<std::string>(std::move(param)), {}};
}


// What a runner reads before its lines run: the input's lines, and the
// answers written before a restart or a takeover.
struct Resumed {
  Input input;
  std::unordered_set<std::string> done;
  std::size_t completed = 0;
  std::size_t failed = 0;
};

}  // namespace

ApiError store_error(const std::string& why) {
  return ApiError{ErrorCode::kInternal, "the Batch API's store: " + why, {}, {}};
}

BatchBook::Metrics::Metrics(metrics::Registry& r)
    : completed(r.counter("arbiter_batch_lines_total", "Batch lines ended, by outcome", {"outcome"}).with({"completed"})),
      failed(r.counter("arbiter_batch_lines_total", "Batch lines ended, by outcome", {"outcome"}).with({"failed"})),
      expired(r.counter("arbiter_batch_lines_total", "Batch lines ended, by outcome", {"outcome"}).with({"expired"})),
      retried(r.counter("arbiter_batch_line_retries_total",
                        "Batch lines answered 429 or 503 and tried again after their Retry-After", {})
                  .with({})),
      in_flight(r.gauge("arbiter_batch_lines_in_flight", "Batch lines handed to the scheduler and not yet ended", {})
                    .with({})),
      running(r.gauge("arbiter_batches_running", "Batches whose lines are running", {}).with({})),
      lease_failures(r.counter("arbiter_batch_lease_failures_total",
                               "Renewals of this replica's batch leases the store did not answer", {})
                         .with({})),
      lost(r.counter("arbiter_batches_lost_total",
                     "Batches whose lines stopped on this replica: their lease was not renewed in time or another "
                     "replica took it",
                     {})
               .with({})) {}

std::expected<std::unique_ptr<BatchBook>, std::string> BatchBook::open(fs::path dir, const StoreConfig& store,
                                                                       std::string replica,
                                                                       net::any_io_executor executor, RunLine run,
                                                                       CurrentRuntime runtime,
                                                                       metrics::Registry& registry, UnixClock now) {
  std::error_code ec;
  fs::create_directories(dir / "jobs", ec);
  if (ec) return std::unexpected((dir / "jobs").string() + ": " + ec.message());
  auto db = open_batch_db(store, dir);
  if (!db) return std::unexpected(db.error());
  auto records = std::make_unique<BatchRecords>(std::move(*db));
  auto files = FileStore::open(dir / "files", *records, now);
  if (!files) return std::unexpected(files.error());
  std::unique_ptr<BatchBook> book(new BatchBook(dir, std::move(records), std::move(*files), std::move(replica),
                                                std::move(executor), std::move(run), std::move(runtime), registry,
                                                std::move(now)));
  book->import_folder_records();
  return book;
}

BatchBook::BatchBook(fs::path dir, std::unique_ptr<BatchRecords> records, std::unique_ptr<FileStore> files,
                     std::string replica, net::any_io_executor executor, RunLine run, CurrentRuntime runtime,
                     metrics::Registry& registry, UnixClock now)
    : dir_(std::move(dir)),
      records_(std::move(records)),
      files_(std::move(files)),
      replica_(std::move(replica)),
      executor_(std::move(executor)),
      run_(std::move(run)),
      runtime_(std::move(runtime)),
      now_(std::move(now)),
      metrics_(registry),
      renewed_(std::chrono::steady_clock::now()) {}

void BatchBook::import_folder_records() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_ / "jobs", ec)) {
    const fs::path& path = entry.path();
    if (path.extension() != ".json") continue;
    const auto text = read_whole(path);
    const auto job = text ? from_record(*text) : std::nullopt;
    // A lease already run out: the first claim, here or on a replica, takes it.
    if (!job || !records_->add_job(*job, replica_, 0)) {
      log_event(EventLevel::kWarn, "batch_record_unreadable", {{"path", path.string()}});
      continue;
    }
    fs::remove(path, ec);
  }
}

BatchBook::~BatchBook() {
  sweep_.stop();
  leases_.stop();
  expiry_.stop();
  worker_.join();  // its queued calls done first
  for (auto& [id, e] : jobs_) {
    if (e->out_fd >= 0) ::close(e->out_fd);
    if (e->err_fd >= 0) ::close(e->err_fd);
  }
}

void BatchBook::start() {
  sweep_.start(executor_, kSweepEvery, [this]() -> Task<void> {
    sweep_deadlines();
    co_return;
  });
  net::co_spawn(executor_, renew(), net::detached);
  leases_.start(executor_, kRenewEvery, [this] { return renew(); });
  net::co_spawn(executor_, expire_files(), net::detached);
  expiry_.start(executor_, kExpireEvery, [this] { return expire_files(); });
}

void BatchBook::stop() {
  sweep_.stop();
  leases_.stop();
  expiry_.stop();
  net::post(executor_, [this] {
    stopping_ = true;
    for (const auto& e : running_) halt(*e);
  });
}

Task<void> BatchBook::drain(std::chrono::milliseconds deadline) {
  stop();
  const auto until = std::chrono::steady_clock::now() + deadline;
  net::steady_timer timer(executor_);
  while (active_.load() > 0 && std::chrono::steady_clock::now() < until) {
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(kAsTuple);
  }
  if (active_.load() > 0) log_event(EventLevel::kWarn, "batch_drain_incomplete", {{"coroutines", active_.load()}});
}

void BatchBook::sweep_deadlines() {
  const auto now = std::chrono::steady_clock::now();
  for (const auto& e : running_) {
    for (LineClient* line : e->live) {
      if (line->deadline().due(now)) line->deadline().expire(now);
    }
  }
}

void BatchBook::halt(Entry& e) {
  for (LineClient* line : e.live) line->cancel();
  for (net::steady_timer* pause : e.pauses) pause->cancel();
  e.wake.cancel();
}

void BatchBook::lose(Entry& e) {
  if (e.lost) return;
  e.lost = true;
  metrics_.lost.inc();
  halt(e);
  log_event(EventLevel::kWarn, "batch_lost", {{"batch", e.job.id}});
}

void BatchBook::leave_running(const std::shared_ptr<Entry>& e) {
  std::erase(running_, e);
  metrics_.running.set(static_cast<double>(running_.size()));
}

void BatchBook::forget(const std::shared_ptr<Entry>& e) {
  for (int* fd : {&e->out_fd, &e->err_fd}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  std::lock_guard lock(mu_);
  if (auto it = jobs_.find(e->job.id); it != jobs_.end() && it->second == e) jobs_.erase(it);
}

Task<void> BatchBook::renew() {
  const Active active(active_);
  if (stopping_) co_return;
  const int64_t now = now_();
  const int64_t takeover = runtime_()->config.batches.takeover.count();
  // The progress of the jobs running here goes with the renewal.
  std::vector<std::shared_ptr<Entry>> moved;
  for (const auto& e : running_) {
    std::lock_guard lock(mu_);
    if (e->job.completed + e->job.failed != e->saved_lines) moved.push_back(e);
  }
  for (auto& e : moved) co_await save(std::move(e));
  auto claimed = co_await on_worker([this, now, takeover] { return records_->claim(replica_, now, now + takeover); });
  if (stopping_) co_return;
  if (!claimed) {
    metrics_.lease_failures.inc();
    log_event(EventLevel::kWarn, "batch_lease_failed", {{"detail", claimed.error()}});
    // Past two thirds of the lease unrenewed, another replica may take the
    // jobs over soon: their lines stop here first (not run twice).
    if (std::chrono::steady_clock::now() - renewed_ > std::chrono::seconds(takeover) * 2 / 3) {
      for (const auto& e : std::vector(running_)) lose(*e);
    }
    co_return;
  }
  renewed_ = std::chrono::steady_clock::now();
  std::set<std::string, std::less<>> held;
  for (const auto& c : *claimed) held.insert(c.job.id);
  for (const auto& e : std::vector(running_)) {
    if (!held.contains(e->job.id)) lose(*e);
  }
  for (auto& c : *claimed) take(std::move(c));
}

Task<void> BatchBook::expire_files() {
  const Active active(active_);
  const int64_t now = now_();
  auto gone = co_await on_worker([this, now] { return files_->expire(now); });
  if (!gone) {
    log_event(EventLevel::kWarn, "batch_file_expiry_failed", {{"detail", gone.error()}});
  } else if (*gone > 0) {
    log_event(EventLevel::kInfo, "batch_files_expired", {{"files", *gone}});
  }
}

void BatchBook::take(BatchRecords::Claimed claimed) {
  std::shared_ptr<Entry> e;
  bool fresh = false;
  {
    std::lock_guard lock(mu_);
    if (const auto it = jobs_.find(claimed.job.id); it != jobs_.end()) {
      e = it->second;
    } else {
      e = std::make_shared<Entry>(std::move(claimed.job), executor_);
      jobs_.emplace(e->job.id, e);
      e->saved_lines = e->job.completed + e->job.failed;
      fresh = true;
    }
  }
  if (claimed.cancel_at != 0) cancel_here(e, claimed.cancel_at);
  // Outside the lock: the runner may start at once, and takes it.
  if (fresh) net::co_spawn(executor_, run_job(e), net::detached);
}

void BatchBook::cancel_here(const std::shared_ptr<Entry>& e, int64_t cancel_at) {
  {
    std::lock_guard lock(mu_);
    if (e->job.status != Status::kInProgress && e->job.status != Status::kValidating) return;
    e->job.status = Status::kCancelling;
    e->job.cancelling_at = cancel_at;
  }
  e->cancelled = true;
  halt(*e);
  net::co_spawn(executor_, save(e), net::detached);
}

Task<bool> BatchBook::save(std::shared_ptr<Entry> e) {
  Job job;
  {
    std::lock_guard lock(mu_);
    job = e->job;
  }
  auto saved = co_await on_worker([this, &job] { return records_->save_job(job, replica_); });
  if (!saved) {
    log_event(EventLevel::kError, "batch_record_write_failed", {{"batch", job.id}, {"detail", saved.error()}});
    co_return false;
  }
  e->saved_lines = job.completed + job.failed;
  if (!*saved) lose(*e);
  co_return *saved;
}

fs::path BatchBook::partial(std::string_view id, bool ok) const {
  return dir_ / "jobs" / (std::string(id) + (ok ? ".output.jsonl" : ".errors.jsonl"));
}

std::expected<Job, ApiError> BatchBook::create(std::string_view tenant, const TenantConfig* config,
                                               const boost::json::object& request) {
  const std::shared_ptr<const Runtime> runtime = runtime_();
  const BatchConfig& settings = runtime->config.batches;
  auto text = [&](std::string_view key) {
    const auto* v = request.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  const std::string endpoint = text("endpoint");
  if (!batch_route(endpoint)) return std::unexpected(invalid("endpoint must be /v1/chat/completions, /v1/completions, /v1/responses or /v1/embeddings", "endpoint"));
  const std::string window = text("completion_window");
  const auto length = parse_window(window, settings.max_window);
  if (!length) {
    return std::unexpected(invalid("completion_window must be a whole number of hours, from 1h to " +
                                       std::to_string(settings.max_window.count()) + "h (batches.max_window_hours)",
                                   "completion_window"));
  }
  boost::json::value metadata = nullptr;
  if (const auto* m = request.if_contains("metadata"); m && !m->is_null()) {
    if (!m->is_object() || m->get_object().size() > 16 ||
        std::any_of(m->get_object().begin(), m->get_object().end(), [](const auto& kv) { return !kv.value().is_string(); })) {
      return std::unexpected(invalid("metadata must be an object of at most 16 string values", "metadata"));
    }
    metadata = *m;
  }
  // The output and error files' expiry: OpenAI's output_expires_after, 30
  // days when not given (the storage a tenant's batches hold stays bounded).
  int64_t output_expires_after = kMaxExpirySeconds;
  if (const auto* policy = request.if_contains("output_expires_after"); policy && !policy->is_null()) {
    const auto* o = policy->if_object();
    const auto* seconds = o ? o->if_contains("seconds") : nullptr;
    const auto* anchor = o ? o->if_contains("anchor") : nullptr;
    const bool whole = seconds && (seconds->is_int64() || seconds->is_uint64()) && anchor && anchor->is_string();
    const int64_t n = whole ? seconds->to_number<int64_t>() : 0;
    if (auto why = whole ? expiry_error(anchor->get_string(), n) : "must be {anchor: created_at, seconds}") {
      return std::unexpected(invalid("output_expires_after: " + *why, "output_expires_after"));
    }
    output_expires_after = n;
  }
  const std::string input_id = text("input_file_id");
  const auto info = files_->find(tenant, input_id);
  if (!info) return std::unexpected(store_error(info.error()));
  if (!*info) return std::unexpected(ApiError{ErrorCode::kNotFound, "no file '" + input_id + "'", "input_file_id", {}});
  if ((*info)->purpose != "batch") {
    return std::unexpected(invalid("file '" + input_id + "' was uploaded with purpose '" + (*info)->purpose + "', not 'batch'", "input_file_id"));
  }
  const auto content = files_->bytes(**info);
  if (!content) {
    return std::unexpected(ApiError{ErrorCode::kInternal, "file '" + input_id + "' cannot be read: " + content.error(), {}, {}});
  }
  Input input = read_input(*content, settings.max_lines);
  for (std::size_t i = 0; i < input.lines.size() && input.errors.size() < kMaxErrors; ++i) {
    if (input.lines[i].url != endpoint) {
      input.errors.push_back({0, "custom_id '" + input.lines[i].custom_id + "' is for " + input.lines[i].url +
                                     ", not the batch's endpoint " + endpoint});
    }
  }
  if (!input.errors.empty()) return std::unexpected(invalid("input file '" + input_id + "': " + describe(input.errors), "input_file_id"));
  const ClassConfig& cls = runtime->config.classes[batch_class(runtime->config)];
  // The lines claim the class (x-arbiter-class): the tenant must be allowed it.
  if (config != nullptr && !config->allowed_classes.empty() &&
      std::find(config->allowed_classes.begin(), config->allowed_classes.end(), cls.name) == config->allowed_classes.end()) {
    return std::unexpected(ApiError{ErrorCode::kForbidden,
                                    "this tenant may not use the class '" + cls.name + "' batches run in", {}, {}});
  }
  const int64_t now = now_();
  Job job{.id = random_id("batch_"),
          .tenant = std::string(tenant),
          .endpoint = endpoint,
          .input_file_id = input_id,
          .completion_window = window,
          .status = Status::kInProgress,
          .created_at = now,
          .in_progress_at = now,
          .expires_at = now + std::chrono::duration_cast<std::chrono::seconds>(*length).count(),
          .total = input.lines.size(),
          .metadata = std::move(metadata),
          .output_id = random_id("file-"),
          .error_id = random_id("file-"),
          .output_expires_after = output_expires_after};
  if (auto added = records_->add_job(job, replica_, now + settings.takeover.count()); !added) {
    return std::unexpected(store_error(added.error()));
  }
  auto e = std::make_shared<Entry>(job, executor_);
  {
    std::lock_guard lock(mu_);
    jobs_.emplace(job.id, e);
  }
  log_event(EventLevel::kInfo, "batch_created",
            {{"batch", job.id}, {"tenant", job.tenant}, {"lines", job.total}, {"class", cls.name}});
  net::co_spawn(executor_, run_job(std::move(e)), net::detached);
  return job;
}

std::expected<std::optional<Job>, ApiError> BatchBook::find(std::string_view tenant, std::string_view id) {
  {
    // Running here: its counts of this moment.
    std::lock_guard lock(mu_);
    if (const auto it = jobs_.find(id); it != jobs_.end() && it->second->job.tenant == tenant) return it->second->job;
  }
  auto job = records_->job(tenant, id);
  if (!job) return std::unexpected(store_error(job.error()));
  return std::move(*job);
}

std::expected<std::vector<Job>, ApiError> BatchBook::list(std::string_view tenant, std::string_view after,
                                                          std::size_t limit, bool& more) {
  auto page = records_->jobs(tenant, after, limit, more);
  if (!page) return std::unexpected(store_error(page.error()));
  std::lock_guard lock(mu_);
  for (Job& job : *page) {
    if (const auto it = jobs_.find(job.id); it != jobs_.end()) job = it->second->job;
  }
  return std::move(*page);
}

std::expected<Job, ApiError> BatchBook::cancel(std::string_view tenant, std::string_view id) {
  const auto only_in_progress = [&](const Job& job) {
    return invalid("batch '" + std::string(id) + "' is " + std::string(status_name(job.status)) +
                   ": only a batch in progress can be cancelled");
  };
  std::shared_ptr<Entry> e;
  Job job;
  {
    std::lock_guard lock(mu_);
    if (const auto it = jobs_.find(id); it != jobs_.end() && it->second->job.tenant == tenant) e = it->second;
    if (e) {
      if (e->job.status == Status::kCancelling || e->job.status == Status::kCancelled) return e->job;
      if (e->job.status != Status::kInProgress && e->job.status != Status::kValidating) {
        return std::unexpected(only_in_progress(e->job));
      }
      e->job.status = Status::kCancelling;
      e->job.cancelling_at = now_();
      job = e->job;
    }
  }
  if (!e) {
    // Run by another replica (or by none this second): asked for in the
    // database, taken up by the one that holds it at its next renewal.
    auto shown = records_->ask_cancel(tenant, id, now_());
    if (!shown) return std::unexpected(store_error(shown.error()));
    if (!*shown) return std::unexpected(ApiError{ErrorCode::kNotFound, "no batch '" + std::string(id) + "'", {}, {}});
    if ((*shown)->status != Status::kCancelling && (*shown)->status != Status::kCancelled) {
      return std::unexpected(only_in_progress(**shown));
    }
    return std::move(**shown);
  }
  // Recorded apart from the job's record, which the runner may be writing
  // from an older copy: a crash before it ends still leaves it cancelled.
  if (auto asked = records_->ask_cancel(tenant, id, job.cancelling_at); !asked) {
    log_event(EventLevel::kError, "batch_record_write_failed", {{"batch", job.id}, {"detail", asked.error()}});
  }
  // The lines running now stop at once: the engines' work with them.
  net::post(executor_, [e] {
    e->cancelled = true;
    halt(*e);
  });
  return job;
}

Task<void> BatchBook::wait(Entry& e) {
  e.wake.expires_at(net::steady_timer::time_point::max());
  co_await e.wake.async_wait(kAsTuple);
}

void BatchBook::append(Entry& e, bool ok, const std::string& line) {
  {
    std::lock_guard lock(mu_);
    (ok ? e.job.completed : e.job.failed) += 1;
  }
  // The id never changes once the job is made: read without the lock.
  int& fd = ok ? e.out_fd : e.err_fd;
  if (fd < 0) fd = ::open(partial(e.job.id, ok).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const std::string text = line + "\n";
  // One write: a crash keeps the line whole or loses it (read_done cuts a torn end).
  if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    log_event(EventLevel::kError, "batch_result_write_failed", {{"batch", e.job.id}});
  }
}

void BatchBook::expire_line(Entry& e, std::string_view custom_id) {
  metrics_.expired.inc();
  append(e, false, error_line(random_id("batch_req_"), custom_id, kExpiredCode, kExpiredMessage));
}

Task<void> BatchBook::run_job(std::shared_ptr<Entry> e) {
  const Active active(active_);
  running_.push_back(e);
  metrics_.running.set(static_cast<double>(running_.size()));
  Job job;
  {
    std::lock_guard lock(mu_);
    job = e->job;
  }
  const bool run_lines = job.status == Status::kInProgress || job.status == Status::kValidating;
  if (run_lines) {
    auto resumed = co_await on_worker([this, &job]() -> std::expected<Resumed, std::string> {
      auto content = files_->content(job.tenant, job.input_file_id);
      if (!content) return std::unexpected(content.error());
      if (!*content) return std::unexpected("its input file '" + job.input_file_id + "' is gone");
      Resumed r{.input = read_input(**content, std::numeric_limits<std::size_t>::max())};
      // What was answered before a restart (or on a replica that died) is not run again.
      r.completed = read_done(partial(job.id, true), r.done);
      r.failed = read_done(partial(job.id, false), r.done);
      return r;
    });
    if (!resumed) {
      leave_running(e);
      co_await fail(e, resumed.error());
      forget(e);
      co_return;
    }
    {
      std::lock_guard lock(mu_);
      e->job.completed = resumed->completed;
      e->job.failed = resumed->failed;
    }
    const auto stopped = [&] { return e->cancelled || e->lost || stopping_; };
    std::vector<InputLine>& lines = resumed->input.lines;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      InputLine& line = lines[i];
      if (resumed->done.contains(line.custom_id)) continue;
      const std::size_t limit = std::max<std::size_t>(1, runtime_()->config.batches.max_in_flight);
      while (e->in_flight >= limit && !stopped()) co_await wait(*e);
      if (stopped()) break;
      if (now_() >= job.expires_at) {
        expire_line(*e, line.custom_id);
        continue;
      }
      ++e->in_flight;
      metrics_.in_flight.add(1);
      net::co_spawn(executor_, run_line(e, std::move(line), i), net::detached);
    }
    while (e->in_flight > 0) co_await wait(*e);
  }
  leave_running(e);
  if (stopping_) co_return;  // resumed at the next start, here or on another replica
  if (!e->lost) co_await finalize(e);
  forget(e);
}

Task<void> BatchBook::run_line(std::shared_ptr<Entry> e, InputLine line, std::size_t index) {
  const Active active(active_);
  // What a line reads of its job never changes once the job is made.
  const std::string& batch_id = e->job.id;
  const std::string& tenant = e->job.tenant;
  const int64_t expires_at = e->job.expires_at;
  const Route route = *route_from_path(line.url);
  std::chrono::seconds pause{1};
  for (;;) {
    const std::shared_ptr<const Runtime> runtime = runtime_();
    const Config& config = runtime->config;
    LineClient client(executor_, tenant, steady_at(expires_at, now_()));
    http::request<http::string_body> raw{http::verb::post, line.url, 11};
    raw.set(http::field::content_type, "application/json");
    raw.set("x-arbiter-class", config.classes[batch_class(config)].name);
    raw.set("x-request-id", batch_id + "-" + std::to_string(index));
    raw.body() = line.body;
    raw.prepare_payload();
    HttpRequest req(std::move(raw));
    e->live.insert(&client);
    co_await run_(route, req, client);
    e->live.erase(&client);
    if (e->cancelled || e->lost || stopping_) break;  // not answered: a resumed job runs it again
    const unsigned status = client.status();
    const bool expired = now_() >= expires_at;
    if ((status == 429 || status == 503) && !expired) {
      // Refused for now (a quota, overload, a drain): again after its Retry-After.
      metrics_.retried.inc();
      net::steady_timer timer(executor_, std::min(client.retry_after().value_or(pause), kMaxPause));
      pause = std::min(pause * 2, kMaxPause);
      e->pauses.insert(&timer);
      co_await timer.async_wait(kAsTuple);
      e->pauses.erase(&timer);
      if (e->cancelled || e->lost || stopping_) break;
      continue;
    }
    if (status == 429 || status == 503) {
      expire_line(*e, line.custom_id);
    } else {
      const bool ok = status >= 200 && status < 300;
      (ok ? metrics_.completed : metrics_.failed).inc();
      append(*e, ok, result_line(random_id("batch_req_"), line.custom_id, status, client.request_id(), client.body()));
    }
    break;
  }
  --e->in_flight;
  metrics_.in_flight.sub(1);
  e->wake.cancel();
}

Task<void> BatchBook::fail(std::shared_ptr<Entry> e, std::string why) {
  {
    std::lock_guard lock(mu_);
    e->job.status = Status::kFailed;
    e->job.failed_at = now_();
    e->job.errors = std::move(why);
    log_event(EventLevel::kWarn, "batch_failed", {{"batch", e->job.id}, {"detail", e->job.errors}});
  }
  co_await save(e);
}

Task<void> BatchBook::finalize(std::shared_ptr<Entry> e) {
  Job job;
  {
    std::lock_guard lock(mu_);
    if (e->job.status == Status::kInProgress || e->job.status == Status::kValidating) {
      e->job.status = Status::kFinalizing;
      e->job.finalizing_at = now_();
    }
    job = e->job;
  }
  // Not recorded (the store is down, or another replica holds the job): the
  // answers stay where they are, and whoever claims it next finalizes it.
  if (!co_await save(e)) co_return;
  for (int* fd : {&e->out_fd, &e->err_fd}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  const auto ended = co_await on_worker([this, &job] {
    Ended ended;
    for (const bool ok : {true, false}) {
      const fs::path path = partial(job.id, ok);
      const std::string& id = ok ? job.output_id : job.error_id;
      std::error_code ec;
      // Moved in already (by an earlier try that stopped before its row).
      const fs::path moved = files_->dir() / id;
      const bool written = fs::exists(path) ? fs::file_size(path, ec) > 0 : fs::exists(moved);
      if (!written) {
        fs::remove(path, ec);
        continue;
      }
      // Read from the file, not kept in memory: a finalize tried again
      // after a restart or a takeover knows it too.
      if (!ok) ended.expired = has_expired_line(fs::exists(path) ? path : moved);
      auto adopted = files_->adopt(id, job.tenant, job.id + (ok ? "_output.jsonl" : "_error.jsonl"),
                                   "batch_output", path, job.output_expires_after);
      if (!adopted) {
        log_event(EventLevel::kError, "batch_file_failed", {{"batch", job.id}, {"detail", adopted.error()}});
        return std::optional<Ended>();  // tried again at the next claim
      }
      (ok ? ended.output_file : ended.error_file) = adopted->id;
    }
    return std::optional(ended);
  });
  if (!ended) co_return;
  {
    std::lock_guard lock(mu_);
    Job& j = e->job;
    j.output_file_id = ended->output_file;
    j.error_file_id = ended->error_file;
    const int64_t now = now_();
    if (j.status == Status::kCancelling) {
      j.status = Status::kCancelled;
      j.cancelled_at = now;
    } else if (ended->expired) {
      j.status = Status::kExpired;
      j.expired_at = now;
    } else {
      j.status = Status::kCompleted;
      j.completed_at = now;
    }
    log_event(EventLevel::kInfo, "batch_ended",
              {{"batch", j.id}, {"status", status_name(j.status)}, {"completed", j.completed}, {"failed", j.failed}});
  }
  co_await save(e);
}

}  // namespace arbiter::batch
