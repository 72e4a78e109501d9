#include "core/store/audit_chain.hpp"

#include <algorithm>
#include <cstdio>

#include "core/store/audit_json.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace arbiter::store {

BatchHasher::BatchHasher(std::string_view prev_hash) : state_(XXH3_createState()) {
  auto* state = static_cast<XXH3_state_t*>(state_);
  XXH3_128bits_reset(state);
  XXH3_128bits_update(state, prev_hash.data(), prev_hash.size());
}

BatchHasher::~BatchHasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void BatchHasher::add(int64_t seq, const AuditView& row) {
  auto* state = static_cast<XXH3_state_t*>(state_);
  feed_canonical_line(seq, row,
                      [state](std::string_view bytes) { XXH3_128bits_update(state, bytes.data(), bytes.size()); });
}

std::string BatchHasher::hex() const {
  const XXH128_hash_t h = XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state_));
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return text;
}

std::string batch_hash(std::string_view prev_hash, const std::vector<std::pair<int64_t, AuditRow>>& rows) {
  BatchHasher hasher(prev_hash);
  for (const auto& [seq, row] : rows) hasher.add(seq, view_of(row));
  return hasher.hex();
}

std::string json_batch_hash(std::string_view prev_hash, std::string_view rows_json) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, prev_hash.data(), prev_hash.size());
  XXH3_128bits_update(&state, rows_json.data(), rows_json.size());
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return text;
}

namespace {

// What is wrong with batch `b` (none: it holds), given the batch before it
// (null: it starts what is kept of the trail).
std::optional<std::string> batch_problem(const StoredBatch& b, const std::string* prev) {
  if (prev && b.prev_hash != *prev) return "links to " + b.prev_hash + ", the batch before it is " + *prev;
  if (static_cast<int64_t>(b.rows.size()) != b.count) {
    return "holds " + std::to_string(b.rows.size()) + " rows, it was written with " + std::to_string(b.count);
  }
  const std::string hash =
      b.form == ChainForm::kJson ? json_batch_hash(b.prev_hash, b.json) : batch_hash(b.prev_hash, b.rows);
  if (hash != b.hash) return "its rows do not hash to " + b.hash + " (edited)";
  return std::nullopt;
}

}  // namespace

Verdict verify_chain(const std::vector<StoredBatch>& batches) {
  Verdict v;
  const std::string* prev = nullptr;
  for (const StoredBatch& b : batches) {
    if (auto problem = batch_problem(b, prev)) {
      v.ok = false;
      v.problem = "batch " + std::to_string(b.batch) + ": " + *problem;
      return v;
    }
    prev = &b.hash;
    ++v.batches;
    v.rows += b.count;
  }
  return v;
}

void TrailCheck::add_batch(const std::string& replica, StoredBatch batch, std::string_view rows_json) {
  Trail& trail = trails_[replica];
  if (!trail.verdict.ok) return;  // its first problem is the one told
  auto rows = parse_audit_json(rows_json);
  if (!rows) {
    trail.verdict.ok = false;
    trail.verdict.problem = "batch " + std::to_string(batch.batch) + ": its rows are not readable (edited)";
    return;
  }
  std::sort(rows->begin(), rows->end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  batch.rows = std::move(*rows);
  if (batch.form == ChainForm::kJson) batch.json = rows_json;
  if (auto problem = batch_problem(batch, trail.started ? &trail.prev_hash : nullptr)) {
    trail.verdict.ok = false;
    trail.verdict.problem = "batch " + std::to_string(batch.batch) + ": " + *problem;
    return;
  }
  trail.started = true;
  trail.prev_hash = std::move(batch.hash);
  ++trail.verdict.batches;
  trail.verdict.rows += batch.count;
}

Verdict TrailCheck::verdict() const {
  Verdict all;
  for (const auto& [replica, trail] : trails_) {
    all.batches += trail.verdict.batches;
    all.rows += trail.verdict.rows;
    if (!trail.verdict.ok && all.ok) {
      all.ok = false;
      all.problem = "replica " + replica + ", " + trail.verdict.problem;
    }
  }
  return all;
}

}  // namespace arbiter::store
