// Quota buckets kept in Redis, shared by every gateway replica: GCRA state
// (one key per limit: its theoretical arrival time, in ms of Redis's own
// clock) changed only by two Lua scripts, so each change is atomic and
// replicas need no clock agreement (docs/quotas.md).
//   take:   grant up to `want` units (at least `need`) of a limit, or say
//           how long until `need` fit;
//   adjust: give units back (an unused lease) or charge them (debt, and
//           what a replica admitted while Redis was unreachable).
// max_concurrent is shared as slots instead: a hash of the slots each
// replica holds, counted only while the replica's liveness key (refreshed
// by every call and heartbeat()) lives, so a dead replica's slots come
// back after its TTL.
#pragma once

#include <chrono>
#include <expected>
#include <string>

#include "core/quota/gcra.hpp"
#include "core/quota/quota_config.hpp"
#include "gateway/redis/redis_connection.hpp"

namespace arbiter {

struct LeaseAnswer {
  bool granted = false;
  double units = 0;              // granted: how many
  quota::Duration wait{};        // refused: until `need` would fit
  double remaining = 0;          // what the bucket holds after this
  quota::Duration reset{};       // until it is full again
};

class RedisQuotaStore {
 public:
  RedisQuotaStore(net::any_io_executor executor, const quota::QuotaStoreConfig& config);

  Task<std::expected<LeaseAnswer, std::string>> take(const std::string& key, double need, double want, double limit,
                                                     quota::Duration period);
  Task<std::expected<void, std::string>> adjust(const std::string& key, double units, double limit,
                                                quota::Duration period);
  Task<std::expected<void, std::string>> ping();

  // Slots: up to `want` (at least `need`) of `max` across the live replicas.
  Task<std::expected<LeaseAnswer, std::string>> take_slots(const std::string& key, double need, double want,
                                                           double max);
  Task<std::expected<void, std::string>> release_slots(const std::string& key, double n);
  Task<std::expected<void, std::string>> heartbeat();

 private:
  RedisConnection connection_;
  std::chrono::milliseconds timeout_;
  std::string live_prefix_;  // PREFIX:live:
  std::chrono::milliseconds live_ttl_;
};

}  // namespace arbiter
