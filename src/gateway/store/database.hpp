// The usage and audit store's database, one interface over its two kinds
// (docs/audit.md): SQLite (sqlite_store.hpp, one file, the default) and
// PostgreSQL (postgres_store.hpp, one database for several replicas). The
// same schema in both; every row tagged with its replica and its sequence
// number in that replica's journal. Not thread-safe: the store writer's
// thread owns it (admin reads go through the writer's lock).
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/store/audit_chain.hpp"
#include "core/store/store_rows.hpp"

namespace arbiter::store {

// Usage added up per hour and (tenant, team, model, class): what the usage
// ledger is seeded with at a start.
struct HourlyUsage {
  int64_t hour_ms = 0;  // the hour's start, unix milliseconds
  std::string tenant, team, model, klass;
  uint64_t requests = 0, prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  double cost = 0;
};

class Database {
 public:
  virtual ~Database() = default;

  // The rows, each with its sequence number (ascending), in one
  // transaction; the audit rows among them as one chained batch. Rows at or
  // below written() are skipped (a replay). The views need only last the
  // call.
  virtual std::expected<void, std::string> write(const std::vector<std::pair<uint64_t, RowView>>& rows) = 0;
  // The last sequence number written for this replica (0: none, or not
  // known yet: a database not reached since the start).
  virtual uint64_t written() const = 0;

  // Every replica's usage since `from_ms`, by hour.
  virtual std::expected<std::vector<HourlyUsage>, std::string> hourly_usage_since(int64_t from_ms) = 0;
  // This replica's newest `limit` audit rows, newest first.
  virtual std::expected<std::vector<AuditRow>, std::string> recent_audit(int limit) = 0;
  // Every batch of the trail, per replica, checked.
  virtual std::expected<Verdict, std::string> verify() = 0;
  // Usage rows and whole audit batches older than `before_ms` go.
  virtual std::expected<void, std::string> prune(int64_t before_ms) = 0;
};

// This gateway's name in the store's rows: store.replica, else the host name.
std::string replica_name(const StoreConfig& settings);

// The PostgreSQL connection string `settings` names (url, or the variable
// url_env names); empty: none (the SQLite file at its path).
std::expected<std::string, std::string> postgres_url(const StoreConfig& settings);

// The database `settings` names: PostgreSQL when it has a url (or url_env),
// else the SQLite file at its path. `replica`: this gateway's name in the
// rows.
std::expected<std::unique_ptr<Database>, std::string> open_database(const StoreConfig& settings, std::string replica);

}  // namespace arbiter::store
