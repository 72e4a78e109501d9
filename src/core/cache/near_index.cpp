#include "core/cache/near_index.hpp"

#include <bit>

namespace arbiter::cache {

namespace {

// Rows for a bound: a power of two, one per kBytesPerRow (at least one).
int row_bits(std::size_t max_bytes) {
  return std::bit_width(std::max<std::size_t>(1, max_bytes / NearIndex::kBytesPerRow)) - 1;
}

}  // namespace

NearIndex::NearIndex(std::size_t max_bytes)
    : row_shift_(64 - row_bits(max_bytes)),
      rows_(std::size_t{1} << row_bits(max_bytes)),
      max_bytes_(max_bytes - std::min(max_bytes, rows_.size() * sizeof(Row))) {}

std::optional<NearIndex::Candidate> NearIndex::find(uint64_t near_scope, const NearText& text,
                                                    double threshold) const {
  std::optional<Candidate> best;
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < text.sketch_size; ++i) {
    const uint64_t b = bucket(near_scope, text.sketch[i]);
    for (const Ref& ref : rows_[row(b)].refs) {
      if (ref.generation == 0 || ref.bucket != b) continue;
      const Entry& e = entries_[ref.entry];
      // A freed or reused slot: skipped (a reused one would still be checked
      // in full below). The bucket holds the scope; it is checked again
      // against a collision of buckets.
      if (e.generation != ref.generation || e.scope != near_scope) continue;
      const double s = near_similarity(e.text, text);
      if (s >= threshold && (!best || s > best->similarity)) best = Candidate{e.key, s};
    }
  }
  return best;
}

void NearIndex::add(uint64_t near_scope, const CacheKey& key, NearText text) {
  const std::size_t size = Entry::bytes(text);
  if (size > max_bytes_) return;
  std::lock_guard lock(mutex_);
  uint32_t id = static_cast<uint32_t>(entries_.size());
  if (free_.empty()) {
    entries_.emplace_back();
  } else {
    id = free_.back();
    free_.pop_back();
  }
  Entry& e = entries_[id];
  e.scope = near_scope;
  e.key = key;
  e.text = std::move(text);
  for (std::size_t i = 0; i < e.text.sketch_size; ++i) {
    const uint64_t b = bucket(near_scope, e.text.sketch[i]);
    Row& r = rows_[row(b)];
    r.refs[r.next] = Ref{.bucket = b, .entry = id, .generation = e.generation};
    r.next = (r.next + 1) % kRow;
  }
  order_.push_back(id);
  bytes_ += size;
  while (bytes_ > max_bytes_) drop_oldest();
}

void NearIndex::drop_oldest() {
  const uint32_t id = order_.front();
  order_.pop_front();
  Entry& e = entries_[id];
  bytes_ -= Entry::bytes(e.text);
  e.text = NearText{};
  e.generation = e.generation == UINT32_MAX ? 1 : e.generation + 1;
  free_.push_back(id);
}

void NearIndex::clear() {
  std::lock_guard lock(mutex_);
  std::fill(rows_.begin(), rows_.end(), Row{});
  entries_.clear();
  free_.clear();
  order_.clear();
  bytes_ = 0;
}

std::size_t NearIndex::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::size_t NearIndex::entries() const {
  std::lock_guard lock(mutex_);
  return order_.size();
}

}  // namespace arbiter::cache
