// The usage and audit store's writer (docs/audit.md): requests hand it rows
// (their bill, their decisions) and go on; it never blocks them on the
// store. A request's rows, encoded by the caller, are written to the
// journal (journal.hpp) and queued as views of the journal's copy, under one
// short lock; a thread of its own decodes and writes the queue to the store
// in batches (Database::write: one transaction, the audit rows chained)
// every 50 ms or sooner when 2,000 rows wait. A store that fails keeps the
// rows queued and journaled (the spool) and is retried with a back-off
// from 100 ms to 5 s; the spool drains, in order, once it is back. At a
// start, what the journal holds past the store's last written row is
// queued again: a crash loses nothing that reached the journal, and the
// store's per-replica sequence number keeps a replayed row from being
// written twice.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <expected>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/config.hpp"
#include "core/store/store_rows.hpp"
#include "gateway/store/journal.hpp"
#include "gateway/store/database.hpp"

namespace arbiter {

class StoreWriter {
 public:
  // Opens the store (store::open_database) and its journal
  // (`settings.path` + ".journal/"), replaying what the journal holds.
  static std::expected<std::unique_ptr<StoreWriter>, std::string> open(const StoreConfig& settings);
  ~StoreWriter();  // stops the thread after one last write

  // Any thread; never waits on the store. `rows`: rows encoded with
  // store::encode_into. A row the journal has no room for (the spool is
  // full) is dropped and counted.
  void add(std::span<const std::string_view> rows);
  void add(const store::Row& row);
  bool audit() const { return audit_; }

  void start();
  // Writes what is queued (one try) and stops the thread.
  void stop();

  // Usage since `from_ms` by hour (what the usage ledger is seeded with at
  // a start): the store's sums and, one entry each, the usage rows queued
  // and not yet written (the journal's, at a start). `store_error`: why the
  // store could not be read (the queued rows are there all the same).
  struct UsageHistory {
    std::vector<store::HourlyUsage> hours;
    std::optional<std::string> store_error;
  };
  UsageHistory usage_since(int64_t from_ms);

  // Between the writer's batches.
  std::expected<std::vector<store::AuditRow>, std::string> recent_audit(int limit);

  // What /metrics shows (export_store_state).
  struct State {
    bool up = true;  // the last write succeeded
    uint64_t spool_rows = 0, spool_bytes = 0;
    uint64_t usage_written = 0, audit_written = 0, dropped = 0, failures = 0;
  };
  State state();

 private:
  StoreWriter(std::unique_ptr<store::Database> db, std::unique_ptr<store::Journal> journal, const StoreConfig& settings);
  void run();
  // One batch to the store; false when it failed (the rows are queued again).
  bool write_batch();

  std::unique_ptr<store::Database> db_;
  std::mutex db_mu_;  // the store: the writer's batches, admin reads
  std::unique_ptr<store::Journal> journal_;
  const bool audit_;
  const std::chrono::hours retention_;
  std::atomic<bool> up_{true};
  std::atomic<uint64_t> usage_written_{0}, audit_written_{0}, dropped_{0}, failures_{0};

  std::mutex mu_;  // the queue and the journal
  std::condition_variable wake_;
  std::deque<std::pair<uint64_t, std::string_view>> queue_;  // encoded rows, in the journal
  std::size_t writing_ = 0;  // rows out of queue_ in the batch being written: still spooled
  uint64_t next_seq_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace arbiter
