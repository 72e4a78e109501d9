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

Verdict verify_chain(const std::vector<StoredBatch>& batches) {
  Verdict v;
  const std::string* prev = nullptr;
  for (const StoredBatch& b : batches) {
    auto fail = [&](std::string what) {
      v.ok = false;
      v.problem = "batch " + std::to_string(b.batch) + ": " + std::move(what);
      return v;
    };
    if (prev && b.prev_hash != *prev) return fail("links to " + b.prev_hash + ", the batch before it is " + *prev);
    if (static_cast<int64_t>(b.rows.size()) != b.count) {
      return fail("holds " + std::to_string(b.rows.size()) + " rows, it was written with " + std::to_string(b.count));
    }
    const std::string hash =
        b.form == ChainForm::kJson ? json_batch_hash(b.prev_hash, b.json) : batch_hash(b.prev_hash, b.rows);
    if (hash != b.hash) return fail("its rows do not hash to " + b.hash + " (edited)");
    prev = &b.hash;
    ++v.batches;
    v.rows += b.count;
  }
  return v;
}

void TrailCheck::add_batch(const std::string& replica, StoredBatch batch, std::string_view rows_json) {
  auto rows = parse_audit_json(rows_json);
  if (!rows) {
    if (!unreadable_) {
      unreadable_ = "replica " + replica + ", batch " + std::to_string(batch.batch) + ": its rows are not readable (edited)";
    }
    rows.emplace();
  }
  std::sort(rows->begin(), rows->end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  batch.rows = std::move(*rows);
  if (batch.form == ChainForm::kJson) batch.json = std::string(rows_json);
  trails_[replica].push_back(std::move(batch));
}

Verdict TrailCheck::verdict() const {
  Verdict all;
  for (const auto& [replica, trail] : trails_) {
    const Verdict v = verify_chain(trail);
    all.batches += v.batches;
    all.rows += v.rows;
    if (!v.ok && all.ok) {
      all.ok = false;
      all.problem = "replica " + replica + ", " + v.problem;
    }
  }
  if (all.ok && unreadable_) {
    all.ok = false;
    all.problem = *unreadable_;
  }
  return all;
}

}  // namespace arbiter::store
