#include "core/cache/result_store.hpp"

#include <algorithm>

namespace arbiter::cache {

ResultStore::ResultStore(std::size_t max_bytes, std::size_t shards)
    : shards_(std::max<std::size_t>(1, shards)), shard_limit_(max_bytes / std::max<std::size_t>(1, shards)) {}

void ResultStore::erase(Shard& shard, std::list<Entry>::iterator it) {
  shard.bytes -= it->bytes;
  bytes_.fetch_sub(it->bytes, std::memory_order_relaxed);
  entries_.fetch_sub(1, std::memory_order_relaxed);
  shard.index.erase(it->key);
  shard.lru.erase(it);
}

std::optional<ResultStore::Hit> ResultStore::find(const CacheKey& key, std::string_view scope, std::string_view model,
                                                  Clock::time_point now, std::optional<Clock::duration> max_age) {
  Shard& shard = shard_of(key);
  std::lock_guard lock(shard.mutex);
  const auto found = shard.index.find(key);
  if (found == shard.index.end()) return std::nullopt;
  const auto it = found->second;
  if (it->expires <= now) {
    erase(shard, it);
    return std::nullopt;
  }
  if (it->scope != scope || it->model != model) return std::nullopt;
  const Clock::duration age = now - it->stored;
  if (max_age && age > *max_age) return std::nullopt;
  shard.lru.splice(shard.lru.begin(), shard.lru, it);
  return Hit{it->answer, age};
}

bool ResultStore::contains(const CacheKey& key, Clock::time_point now) {
  Shard& shard = shard_of(key);
  std::lock_guard lock(shard.mutex);
  const auto found = shard.index.find(key);
  return found != shard.index.end() && found->second->expires > now;
}

void ResultStore::replace(const CacheKey& key, const StoredAnswer* was, std::shared_ptr<const StoredAnswer> answer) {
  Shard& shard = shard_of(key);
  std::lock_guard lock(shard.mutex);
  const auto found = shard.index.find(key);
  if (found == shard.index.end() || found->second->answer.get() != was) return;
  Entry& e = *found->second;
  const std::size_t size = answer->bytes() + e.scope.size() + e.model.size() + kEntryOverhead;
  shard.bytes = shard.bytes - e.bytes + size;
  bytes_.fetch_add(size, std::memory_order_relaxed);
  bytes_.fetch_sub(e.bytes, std::memory_order_relaxed);
  e.bytes = size;
  e.answer = std::move(answer);
  while (shard.bytes > shard_limit_ && shard.lru.size() > 1) {
    erase(shard, std::prev(shard.lru.end()));
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ResultStore::erase(const CacheKey& key) {
  Shard& shard = shard_of(key);
  std::lock_guard lock(shard.mutex);
  if (const auto found = shard.index.find(key); found != shard.index.end()) erase(shard, found->second);
}

std::size_t ResultStore::flush(std::string_view model) {
  std::size_t dropped = 0;
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    for (auto it = shard.lru.begin(); it != shard.lru.end();) {
      const auto next = std::next(it);
      if (model.empty() || it->model == model) {
        erase(shard, it);
        ++dropped;
      }
      it = next;
    }
  }
  return dropped;
}

bool ResultStore::put(const CacheKey& key, std::string_view scope, std::string_view model,
                      std::shared_ptr<const StoredAnswer> answer, Clock::time_point now, Clock::duration ttl) {
  const std::size_t size = answer->bytes() + scope.size() + model.size() + kEntryOverhead;
  if (size > shard_limit_) return false;
  Shard& shard = shard_of(key);
  std::lock_guard lock(shard.mutex);
  if (const auto found = shard.index.find(key); found != shard.index.end()) erase(shard, found->second);
  shard.lru.push_front(Entry{key, std::string(scope), std::string(model), std::move(answer), now, now + ttl, size});
  shard.index.emplace(key, shard.lru.begin());
  shard.bytes += size;
  bytes_.fetch_add(size, std::memory_order_relaxed);
  entries_.fetch_add(1, std::memory_order_relaxed);
  while (shard.bytes > shard_limit_) {
    erase(shard, std::prev(shard.lru.end()));
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

}  // namespace arbiter::cache
