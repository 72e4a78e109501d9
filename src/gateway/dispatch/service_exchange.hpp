// Tenant fairness across gateway replicas in front of the same engines
// (issue 14): every half second each replica publishes its scheduler's
// recent service per (model, class, tenant) to Redis (quota_store.redis)
// and reads back the sum of the others', which the scheduler counts with
// its own (Scheduler::set_remote_service): a tenant flooding one replica is
// held to its share on the others too. One Lua script per exchange, off
// the request path; replicas that stop publishing drop out after 2 s. A
// failed exchange leaves the last figures for one more round, then none.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "core/string_map.hpp"
#include "gateway/dispatch/dispatcher.hpp"
#include "gateway/periodic.hpp"
#include "gateway/redis/redis_connection.hpp"

namespace arbiter {

class ServiceExchange {
 public:
  // Model name -> its pools (config indexes), as the gateway routes by.
  using PoolIndex = std::unordered_map<std::string, std::vector<std::size_t>>;
  ServiceExchange(const Config& config, const PoolIndex& pool_index, SchedulerLink dispatcher,
                  net::any_io_executor executor);
  void start();
  void stop();
  uint64_t exchanges() const { return exchanges_; }  // successful ones

 private:
  Task<void> exchange();  // one round
  // "model\x1fclass\x1ftenant": names, so replicas agree whatever their pool order.
  std::string field(const sched::ServiceRate& r) const;
  std::optional<sched::ServiceRate> parse(std::string_view field, double per_second) const;

  const Config& config_;
  const PoolIndex& pool_index_;
  SchedulerLink dispatcher_;
  net::any_io_executor executor_;
  RedisConnection redis_;
  StringMap<sched::TenantId> tenant_ids_;
  Periodic loop_;
  std::atomic<uint64_t> exchanges_{0};
  int failures_in_a_row_ = 0;
};

}  // namespace arbiter
