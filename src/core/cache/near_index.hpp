// The near-duplicate index (docs/cache.md#near-duplicates): the prompts of
// the answers kept, by their near scope (the key without the prompt) and
// their sketch (core/cache/near_duplicate.hpp), bounded by bytes (the
// oldest out first). It only names candidates: the store still holds the
// answer and checks its scope and model (a prompt whose answer the store
// evicted finds nothing).
//
// Laid out for a miss's few cache lines: a fixed table of rows, each the
// newest references to prompts whose bucket (near scope and one sketch
// hash) falls in it, and the prompts in reused slots. A lookup reads one
// row per sketch hash and only the prompts its references name; an
// eviction frees its slot and leaves its references to go stale (a slot's
// generation moves on), so nothing allocates or frees per reference.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "core/cache/cache_key.hpp"
#include "core/cache/near_duplicate.hpp"

namespace arbiter::cache {

class NearIndex {
 public:
  // References a row holds: the newest (of any buckets that share it).
  static constexpr std::size_t kRow = 8;
  // The table has a row per this many bytes of the bound (a 1 KiB prompt's
  // entry is about 2.5 KiB): at most a few percent of the bound, counted in it.
  static constexpr std::size_t kBytesPerRow = 2048;

  explicit NearIndex(std::size_t max_bytes);

  struct Candidate {
    CacheKey key;
    double similarity = 0;
  };
  // The most similar prompt at or above `threshold` in `near_scope`.
  std::optional<Candidate> find(uint64_t near_scope, const NearText& text, double threshold) const;
  void add(uint64_t near_scope, const CacheKey& key, NearText text);

  void clear();
  std::size_t bytes() const;    // of the prompts kept (the table aside)
  std::size_t entries() const;

 private:
  struct Entry {
    uint64_t scope = 0;
    CacheKey key;
    NearText text;
    uint32_t generation = 1;  // moves on when the slot is freed; never 0
    // What a prompt counts against the bound: its slot, its text and its
    // place in order_.
    static std::size_t bytes(const NearText& text) { return sizeof(Entry) + sizeof(uint32_t) + text.bytes(); }
  };
  struct Ref {
    uint64_t bucket = 0;
    uint32_t entry = 0;
    uint32_t generation = 0;  // 0: empty
  };
  struct Row {
    std::array<Ref, kRow> refs{};
    uint32_t next = 0;  // the reference the next one replaces: the oldest
  };
  static uint64_t bucket(uint64_t scope, uint64_t sketch) { return scope ^ (sketch * 0x9e3779b97f4a7c15ULL); }
  std::size_t row(uint64_t bucket) const { return (bucket * 0xbf58476d1ce4e5b9ULL) >> row_shift_; }
  void drop_oldest();  // under the lock

  mutable std::mutex mutex_;
  int row_shift_;
  std::vector<Row> rows_;
  std::vector<Entry> entries_;  // slots, reused
  std::vector<uint32_t> free_;  // slots of entries_ that hold nothing
  std::deque<uint32_t> order_;  // slots held, oldest first
  std::size_t bytes_ = 0;
  std::size_t max_bytes_;  // for the entries: the bound less the table
};

}  // namespace arbiter::cache
