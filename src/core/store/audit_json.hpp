// A batch's audit rows as the store keeps them (docs/audit.md, "Schema"):
// one JSON array per batch, each row an array [seq, ts_ms, kind,
// request_id, tenant, class, model, detail]. One database row per batch
// instead of one per decision: the insert a decision cost (a b-tree insert
// of ten columns, ~15k instructions) becomes a few hundred bytes appended to
// a string. The stores' `audit` view unpacks it for SQL. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/store/store_rows.hpp"

namespace arbiter::store {

// Appends the row's array to `out` (the caller writes the enclosing
// brackets and the commas between rows). The text must be valid UTF-8
// (clean_text.hpp).
void append_audit_json(std::string& out, int64_t seq, const AuditView& row);

// The rows of a batch's array, in its order; nullopt when `json` is not
// such an array.
std::optional<std::vector<std::pair<int64_t, AuditRow>>> parse_audit_json(std::string_view json);

// The newest rows of a batch's array (highest sequence first) appended to
// `out` until it holds `limit`.
void append_newest(std::string_view rows_json, std::size_t limit, std::vector<AuditRow>& out);

// One write's audit rows as the batch both stores keep: the rows (their
// text made valid UTF-8 without NULs first, clean_text.hpp: PostgreSQL
// refuses the rest, and a row refused would block the queue) as their JSON
// array, and its hash chained to the batch before (ChainForm::kJson).
class AuditBatchBuilder {
 public:
  // `rows`: how many the batch may hold, to size its text once (a batch of
  // 5,000 grown by doubling copied and reallocated its ~1 MB a dozen
  // times). `buffer`: a previous batch's text to write into (cleared), so a
  // store that hands each batch's back keeps one buffer: no allocation and
  // no fresh pages to fault in per batch.
  // The room is taken at the first row: a batch of usage rows alone takes none.
  explicit AuditBatchBuilder(std::string_view prev_hash, std::size_t rows = 0, std::string buffer = {})
      : prev_hash_(prev_hash), json_(std::move(buffer)), rows_(rows) {
    json_.clear();
    json_ += '[';
  }
  void add(int64_t seq, const AuditView& row);
  int64_t count() const { return count_; }
  int64_t last_seq() const { return last_seq_; }
  int64_t last_ts() const { return last_ts_; }
  // The array, closed, and its hash (once, at the end).
  struct Batch {
    std::string json, hash;
  };
  Batch finish();

 private:
  static constexpr std::size_t kTypicalRowBytes = 256;  // a `dispatched` row's JSON is ~200
  std::string prev_hash_;
  std::string json_;
  std::size_t rows_;  // the most the batch may hold
  int64_t count_ = 0, last_seq_ = 0, last_ts_ = 0;
};

}  // namespace arbiter::store
