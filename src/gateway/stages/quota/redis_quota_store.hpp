// Quota buckets kept in Redis, shared by every gateway replica: GCRA state
// (one key per limit: its theoretical arrival time, in ms of Redis's own
// clock) changed only by two Lua scripts, so each change is atomic and
// replicas need no clock agreement (docs/quotas.md).
//   take:   grant up to `want` units (at least `need`) of a limit, or say
//           how long until `need` fit;
//   adjust: give units back (an unused lease) or charge them (debt, and
//           what a replica admitted while Redis was unreachable).
#pragma once

#include <chrono>
#include <expected>
#include <string>

#include "core/quota/gcra.hpp"
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
  RedisQuotaStore(net::any_io_executor executor, const std::string& host_port, std::chrono::milliseconds timeout);

  Task<std::expected<LeaseAnswer, std::string>> take(const std::string& key, double need, double want, double limit,
                                                     quota::Duration period);
  Task<std::expected<void, std::string>> adjust(const std::string& key, double units, double limit,
                                                quota::Duration period);
  Task<std::expected<void, std::string>> ping();

 private:
  RedisConnection connection_;
  std::chrono::milliseconds timeout_;
};

}  // namespace arbiter
