// The database the Batch API's records live in (docs/batches.md, "Where
// jobs and files live"): the usage store's, its SQLite file (store.path)
// or its PostgreSQL (store.url, shared by replicas); with the store off, a
// SQLite file in batches.dir. One small interface over the two: a
// statement with its parameters as text ($1, $2, ...), its rows as text.
// Each makes the Batch API's tables when they are missing. Not
// thread-safe: the Batch API's worker thread owns it.
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace arbiter::batch {

class BatchDb {
 public:
  using Row = std::vector<std::string>;
  virtual ~BatchDb() = default;
  // One statement; NULLs read as empty text.
  virtual std::expected<std::vector<Row>, std::string> query(const std::string& sql,
                                                             const std::vector<std::string>& params = {}) = 0;
};

// `store`: the usage store's settings, its path resolved; `enabled` false
// puts the file in `batch_dir` (batches.db). PostgreSQL is connected at the
// first query and again after a failure.
std::expected<std::unique_ptr<BatchDb>, std::string> open_batch_db(const StoreConfig& store,
                                                                   const std::filesystem::path& batch_dir);

}  // namespace arbiter::batch
