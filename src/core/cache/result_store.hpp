// The in-process result store (docs/cache.md): answers by key, bounded by
// their bytes (least recently used out first) and by a time to live. The
// clock is the caller's (every call takes `now`). Sharded by key, a mutex
// each, held for a map operation only: an answer goes out as a shared
// pointer, replayed after the lock is gone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cache/cache_key.hpp"
#include "core/cache/cached_answer.hpp"

namespace arbiter::cache {

class ResultStore {
 public:
  using Clock = std::chrono::steady_clock;

  struct Hit {
    std::shared_ptr<const StoredAnswer> answer;
    Clock::duration age{};
  };

  // Map and list nodes, the key, the times: what an entry costs beyond its
  // strings (counted in bytes()).
  static constexpr std::size_t kEntryOverhead = 160;

  explicit ResultStore(std::size_t max_bytes, std::size_t shards = 16);

  // The entry of `key` when it belongs to `scope` and `model` (compared,
  // not only hashed: a collision cannot cross a tenant), is not expired and
  // not older than `max_age`. A hit becomes the most recently used.
  std::optional<Hit> find(const CacheKey& key, std::string_view scope, std::string_view model, Clock::time_point now,
                          std::optional<Clock::duration> max_age = std::nullopt);
  // Keeps `answer` until `now + ttl` or until evicted; replaces an entry of
  // the same key. False when it is larger than a shard's part of the bound.
  bool put(const CacheKey& key, std::string_view scope, std::string_view model,
           std::shared_ptr<const StoredAnswer> answer, Clock::time_point now, Clock::duration ttl);
  // The entry's answer replaced (its bytes read at its first hit), when it
  // still holds `was`; its place and life stay.
  void replace(const CacheKey& key, const StoredAnswer* was, std::shared_ptr<const StoredAnswer> answer);
  void erase(const CacheKey& key);
  // Drops every entry of `model` (every entry when empty); how many.
  std::size_t flush(std::string_view model);
  // Whether `key` is held (not expired): the near-duplicate index drops
  // what the store evicted.
  bool contains(const CacheKey& key, Clock::time_point now);

  std::size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  std::size_t entries() const { return entries_.load(std::memory_order_relaxed); }
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  std::size_t max_bytes() const { return shard_limit_ * shards_.size(); }

 private:
  struct Entry {
    CacheKey key;
    std::string scope;
    std::string model;
    std::shared_ptr<const StoredAnswer> answer;
    Clock::time_point stored;
    Clock::time_point expires;
    std::size_t bytes = 0;
  };
  struct Shard {
    std::mutex mutex;
    std::list<Entry> lru;  // most recently used first
    std::unordered_map<CacheKey, std::list<Entry>::iterator, CacheKeyHash> index;
    std::size_t bytes = 0;
  };

  Shard& shard_of(const CacheKey& key) { return shards_[key.hi % shards_.size()]; }
  void erase(Shard& shard, std::list<Entry>::iterator it);  // under the shard's lock

  std::vector<Shard> shards_;
  std::size_t shard_limit_;
  std::atomic<std::size_t> bytes_{0};
  std::atomic<std::size_t> entries_{0};
  std::atomic<uint64_t> evictions_{0};
};

}  // namespace arbiter::cache
