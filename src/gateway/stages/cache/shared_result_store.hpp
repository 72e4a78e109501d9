// The result cache shared by gateway replicas through Redis (`cache.redis`;
// docs/cache.md#storage), behind the in-process store: a request that
// misses locally asks Redis (GET, within `redis_timeout_ms`), and a kept
// answer is written there too (SET with the TTL, not waited for). Values
// are stored_value's encoding, deflated. Redis down, slow or answering
// nonsense is a miss, never an error: after a failure the store is skipped
// for a second (so an outage costs one timeout a second, not one per
// request), and the local cache goes on alone.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/cache/cache_config.hpp"
#include "core/cache/cache_key.hpp"
#include "gateway/redis/redis_connection.hpp"
#include "gateway/stages/cache/cache_metrics.hpp"
#include "gateway/stages/cache/stored_value.hpp"

namespace arbiter {

class SharedResultStore {
 public:
  SharedResultStore(net::any_io_executor executor, const cache::CacheConfig& config, CacheMetrics& metrics);

  // Not skipped after a recent failure.
  bool available() const;
  // The answer of `key` when Redis has one of this scope and model, not
  // older than `max_age`; none otherwise (a miss, or Redis unreachable).
  Task<std::optional<StoredValue>> get(const cache::CacheKey& key, std::string scope, std::string model,
                                       std::optional<std::chrono::milliseconds> max_age);
  // Writes it, in the background.
  void put(const cache::CacheKey& key, StoredValue value, std::chrono::seconds ttl);
  // Deletes every kept answer of `model` (all when empty): SCAN and UNLINK
  // in batches. How many, or why it stopped.
  Task<std::expected<std::size_t, std::string>> flush(std::string model);

 private:
  // arbiter:cache:<model>:<key>: a model's keys are found by their prefix.
  static std::string key_of(std::string_view model, const cache::CacheKey& key);
  void count_error(std::string_view kind);
  void failed(std::string_view why);  // counted, and the store skipped a while

  net::any_io_executor executor_;
  RedisConnection connection_;
  std::chrono::milliseconds timeout_;
  CacheMetrics& metrics_;
  std::atomic<int64_t> skip_until_ms_{0};  // steady clock: a failure skips the store this long
};

}  // namespace arbiter
