#include "gateway/store/store_writer.hpp"

#include <unistd.h>

#include <algorithm>

#include "observability/event_log.hpp"

namespace arbiter {

namespace {

constexpr auto kFlushInterval = std::chrono::milliseconds(50);
constexpr std::size_t kWakeAt = 2'000;      // rows queued that wake the writer before its interval
constexpr std::size_t kBatchRows = 5'000;   // rows per transaction
constexpr auto kFirstBackoff = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::milliseconds(5'000);
constexpr auto kPruneEvery = std::chrono::hours(1);

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::expected<std::unique_ptr<StoreWriter>, std::string> StoreWriter::open(const StoreConfig& settings) {
  auto db = store::open_database(settings, store::replica_name(settings));
  if (!db) return std::unexpected("store: " + db.error());
  auto journal = store::Journal::open(settings.path + ".journal", settings.spool_bytes);
  if (!journal) return std::unexpected("store: " + journal.error());
  return std::unique_ptr<StoreWriter>(new StoreWriter(std::move(*db), std::move(*journal), settings));
}

StoreWriter::StoreWriter(std::unique_ptr<store::Database> db, std::unique_ptr<store::Journal> journal,
                         const StoreConfig& settings)
    : db_(std::move(db)), journal_(std::move(journal)), audit_(settings.audit), retention_(settings.retention) {
  // What the journal holds past the store's last row: written before
  // anything new (a crash's, or an outage's, rows).
  const uint64_t written = db_->written();
  uint64_t last = written;
  for (const auto& [seq, payload] : journal_->recovered()) {
    last = std::max(last, seq);
    if (seq > written) queue_.emplace_back(seq, payload);
  }
  // Never below the clock in microseconds: a database not reached at the
  // start (written() unknown, 0) after the journal was lost (a new disk)
  // cannot be handed numbers it already holds for this replica, which it
  // would skip as replayed. A run numbers fewer than a million rows a
  // second, so each start begins past the last one's end.
  const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  next_seq_ = std::max(last + 1, static_cast<uint64_t>(now_us));
  if (!queue_.empty()) {
    log_event(EventLevel::kInfo, "store_replay", {{"rows", queue_.size()}, {"after_seq", written}});
  }
}

StoreWriter::~StoreWriter() { stop(); }

void StoreWriter::add(std::span<const std::string_view> rows) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    for (const std::string_view bytes : rows) {
      const uint64_t seq = next_seq_;
      const std::optional<std::string_view> copy = journal_->append(seq, bytes);
      if (!copy) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      ++next_seq_;
      queue_.emplace_back(seq, *copy);
      wake = wake || queue_.size() == kWakeAt;
    }
  }
  if (wake) wake_.notify_one();
}

void StoreWriter::add(const store::Row& row) {
  const std::string bytes = store::encode(row);
  const std::string_view view = bytes;
  add(std::span(&view, 1));
}

void StoreWriter::start() { thread_ = std::thread([this] { run(); }); }

void StoreWriter::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

bool StoreWriter::write_batch() {
  std::vector<std::pair<uint64_t, std::string_view>> taken;
  {
    std::lock_guard lock(mu_);
    const std::size_t n = std::min(queue_.size(), kBatchRows);
    taken.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    writing_ = n;
  }
  if (taken.empty()) return true;
  // The journal's copies stay until this thread releases them: decoded
  // without the lock.
  std::vector<std::pair<uint64_t, store::RowView>> batch;
  batch.reserve(taken.size());
  for (const auto& [seq, bytes] : taken) {
    if (auto row = store::decode_view(bytes)) batch.emplace_back(seq, *row);
  }
  std::expected<void, std::string> done;
  {
    std::lock_guard lock(db_mu_);
    done = db_->write(batch);
  }
  if (!done) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    if (up_.exchange(false)) log_event(EventLevel::kWarn, "store_down", {{"detail", done.error()}});
    std::lock_guard lock(mu_);
    // Back at the front, in order: the spool keeps every row until written.
    queue_.insert(queue_.begin(), taken.begin(), taken.end());
    writing_ = 0;
    return false;
  }
  uint64_t usage = 0;
  for (const auto& entry : batch) usage += std::holds_alternative<store::UsageView>(entry.second);
  usage_written_.fetch_add(usage, std::memory_order_relaxed);
  audit_written_.fetch_add(batch.size() - usage, std::memory_order_relaxed);
  if (!up_.exchange(true)) log_event(EventLevel::kInfo, "store_up", {});
  std::lock_guard lock(mu_);
  journal_->release_through(taken.back().first);
  writing_ = 0;
  return true;
}

void StoreWriter::run() {
  auto backoff = kFirstBackoff;
  auto next_prune = std::chrono::steady_clock::now();
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, kFlushInterval, [&] { return stopping_ || queue_.size() >= kWakeAt; });
      stopping = stopping_;
    }
    bool ok = true;
    while (ok) {
      ok = write_batch();
      std::lock_guard lock(mu_);
      if (queue_.empty()) break;
    }
    if (stopping) return;  // what is left stays in the journal for the next start
    if (!ok) {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, backoff, [&] { return stopping_; });
      backoff = std::min(backoff * 2, kMaxBackoff);
      continue;
    }
    backoff = kFirstBackoff;
    if (std::chrono::steady_clock::now() >= next_prune) {
      next_prune = std::chrono::steady_clock::now() + kPruneEvery;
      std::lock_guard lock(db_mu_);
      const auto cutoff = unix_ms_now() - std::chrono::duration_cast<std::chrono::milliseconds>(retention_).count();
      if (auto pruned = db_->prune(cutoff); !pruned) {
        log_event(EventLevel::kWarn, "store_prune_failed", {{"detail", pruned.error()}});
      }
    }
  }
}

StoreWriter::UsageHistory StoreWriter::usage_since(int64_t from_ms) {
  UsageHistory history;
  uint64_t written = 0;  // queued rows the store already holds (replayed at a start) are in its sums
  {
    std::lock_guard lock(db_mu_);
    written = db_->written();
    if (auto sums = db_->hourly_usage_since(from_ms)) {
      history.hours = std::move(*sums);
    } else {
      history.store_error = sums.error();
    }
  }
  constexpr int64_t kHourMs = 3'600'000;
  std::lock_guard lock(mu_);
  for (const auto& entry : queue_) {
    if (entry.first <= written) continue;
    const auto row = store::decode_view(entry.second);
    const auto* u = row ? std::get_if<store::UsageView>(&*row) : nullptr;
    if (u == nullptr || u->ts_ms < from_ms) continue;
    history.hours.push_back({.hour_ms = u->ts_ms / kHourMs * kHourMs,
                             .tenant = std::string(u->tenant),
                             .team = std::string(u->team),
                             .model = std::string(u->model),
                             .klass = std::string(u->klass),
                             .requests = 1,
                             .prompt_tokens = static_cast<uint64_t>(u->prompt_tokens),
                             .completion_tokens = static_cast<uint64_t>(u->completion_tokens),
                             .cached_tokens = static_cast<uint64_t>(u->cached_tokens),
                             .cost = u->cost});
  }
  return history;
}

std::expected<std::vector<store::AuditRow>, std::string> StoreWriter::recent_audit(int limit) {
  std::lock_guard lock(db_mu_);
  return db_->recent_audit(limit);
}

StoreWriter::State StoreWriter::state() {
  State s{.up = up_.load(),
          .spool_rows = 0,
          .spool_bytes = 0,
          .usage_written = usage_written_.load(),
          .audit_written = audit_written_.load(),
          .dropped = dropped_.load(),
          .failures = failures_.load()};
  std::lock_guard lock(mu_);
  // A batch in flight is not in the store yet: a reader that sees 0 may
  // count on every row being there.
  s.spool_rows = queue_.size() + writing_;
  s.spool_bytes = journal_->bytes();
  return s;
}

}  // namespace arbiter
