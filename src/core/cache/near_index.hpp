// The near-duplicate index (docs/cache.md#near-duplicates): the prompts of
// the answers kept, by their near scope (the key without the prompt) and
// their sketch (core/cache/near_duplicate.hpp), bounded by bytes (the
// oldest out first). It only names candidates: the store still holds the
// answer and checks its scope and model (a prompt whose answer the store
// evicted finds nothing).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/cache/cache_key.hpp"
#include "core/cache/near_duplicate.hpp"

namespace arbiter::cache {

class NearIndex {
 public:
  // Entries sharing one bucket (a near scope and a sketch hash): the newest.
  static constexpr std::size_t kBucket = 8;

  explicit NearIndex(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  struct Candidate {
    CacheKey key;
    double similarity = 0;
  };
  // The most similar prompt at or above `threshold` in `near_scope`.
  std::optional<Candidate> find(uint64_t near_scope, const NearText& text, double threshold) const;
  void add(uint64_t near_scope, const CacheKey& key, NearText text);

  void clear();
  std::size_t bytes() const;
  std::size_t entries() const;

 private:
  struct Entry {
    uint64_t scope = 0;
    CacheKey key;
    NearText text;
    std::size_t bytes() const { return sizeof(Entry) + text.bytes() + 64; }
  };
  using EntryPtr = std::shared_ptr<const Entry>;
  static uint64_t bucket(uint64_t scope, uint64_t sketch) { return scope ^ (sketch * 0x9e3779b97f4a7c15ULL); }
  void drop_oldest();  // under the lock

  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, std::vector<EntryPtr>> buckets_;
  std::deque<EntryPtr> order_;  // oldest first
  std::size_t bytes_ = 0;
  std::size_t max_bytes_;
};

}  // namespace arbiter::cache
