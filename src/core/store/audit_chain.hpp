// The audit trail's hash chain (docs/audit.md, "Verification"): the writer
// stores audit rows in batches, and each batch's hash covers the previous
// batch's hash and its rows: the batch's JSON text as stored
// (audit_json.hpp; ChainForm::kJson, every batch written since schema 2), or
// its rows' canonical lines (store_rows.hpp) in sequence order (kLines:
// batches written before, kept as they were hashed). Editing, removing or
// inserting a row changes its batch's hash; removing a whole batch breaks
// the next one's link. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/store/store_rows.hpp"

namespace arbiter::store {

// 32 hex digits (XXH3-128). The first batch of a trail links to kChainStart.
inline constexpr std::string_view kChainStart = "00000000000000000000000000000000";

// A batch's hash, its rows added in sequence order.
class BatchHasher {
 public:
  explicit BatchHasher(std::string_view prev_hash);
  ~BatchHasher();
  BatchHasher(const BatchHasher&) = delete;
  BatchHasher& operator=(const BatchHasher&) = delete;
  void add(int64_t seq, const AuditView& row);
  std::string hex() const;

 private:
  void* state_;  // an XXH3 state (xxhash.h stays out of this header)
};
std::string batch_hash(std::string_view prev_hash, const std::vector<std::pair<int64_t, AuditRow>>& rows);
// The hash of a batch kept as JSON: the previous hash, then the text.
std::string json_batch_hash(std::string_view prev_hash, std::string_view rows_json);

// What a batch's hash covers (the stores' audit_batches.chain).
enum class ChainForm : int64_t { kLines = 1, kJson = 2 };

// A stored batch and the rows the store holds for it.
struct StoredBatch {
  int64_t batch = 0;
  int64_t count = 0;           // rows it was written with
  std::string prev_hash, hash;
  std::vector<std::pair<int64_t, AuditRow>> rows;  // (seq, row), ascending
  ChainForm form = ChainForm::kLines;
  std::string_view json;  // kJson: the rows' text as stored (a view, valid while it is checked)
};

struct Verdict {
  bool ok = true;
  int64_t batches = 0, rows = 0;
  std::string problem;  // the first one found: which batch, and what
};
// Checks every batch against its rows and its predecessor, in order. The
// first batch's prev_hash is taken as given (retention may have removed
// what came before it).
Verdict verify_chain(const std::vector<StoredBatch>& batches);

// A store's whole trail, every replica's, checked batch by batch as the
// store reads them (each replica's in batch order, each with its rows'
// JSON array, audit_json.hpp), keeping no more than the last hash per
// replica: a year of batches verifies in the memory of one. Rows that do
// not parse fail their batch.
class TrailCheck {
 public:
  void add_batch(const std::string& replica, StoredBatch batch, std::string_view rows_json);
  Verdict verdict() const;

 private:
  struct Trail {
    bool started = false;   // a batch was checked: the next links to prev_hash
    std::string prev_hash;
    Verdict verdict;        // so far; its first problem stops the checking
  };
  std::map<std::string, Trail> trails_;
};

}  // namespace arbiter::store
