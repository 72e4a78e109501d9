#include "gateway/dispatch/service_exchange.hpp"

#include <fmt/format.h>

#include "core/tenants.hpp"
#include "gateway/redis/replica_name.hpp"

namespace arbiter {

namespace {

constexpr auto kInterval = std::chrono::milliseconds(500);
constexpr auto kTtl = std::chrono::milliseconds(2000);
constexpr char kSep = '\x1f';

// KEYS: this replica's hash, the registry of replicas. ARGV: replica name,
// TTL ms, key prefix of the hashes, then field, rate pairs. Publishes ours,
// drops replicas silent for a TTL, returns the others' rates summed per
// field as field, rate pairs. Reads keys named from the registry: a single
// Redis node, as for the quota keys.
constexpr const char* kExchangeScript = R"lua(
local replica, ttl, prefix = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('DEL', KEYS[1])
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[2], now, replica)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[2], ttl * 10)
local sums = {}
for _, other in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if other ~= replica then
    local kv = redis.call('HGETALL', prefix .. other)
    for i = 1, #kv, 2 do sums[kv[i]] = (sums[kv[i]] or 0) + tonumber(kv[i + 1]) end
  end
end
local out = {}
for k, v in pairs(sums) do
  out[#out + 1] = k
  out[#out + 1] = tostring(v)
end
return out
)lua";

std::string_view next_part(std::string_view& rest) {
  const auto at = rest.find(kSep);
  const std::string_view part = rest.substr(0, at);
  rest = at == std::string_view::npos ? std::string_view() : rest.substr(at + 1);
  return part;
}

}  // namespace

ServiceExchange::ServiceExchange(const Config& config, const PoolIndex& pool_index, SchedulerLink dispatcher,
                                 net::any_io_executor executor)
    : config_(config),
      pool_index_(pool_index),
      dispatcher_(dispatcher),
      executor_(executor),
      redis_(executor, *parse_redis_address(config.quota_store.redis)) {  // checked by the config loader
  for (std::size_t i = 0; i < config.tenants.size(); ++i) {
    tenant_ids_.emplace(config.tenants[i].name, static_cast<sched::TenantId>(i));
  }
  tenant_ids_.emplace(std::string(kAnonymousTenant), static_cast<sched::TenantId>(config.tenants.size()));
}

std::string ServiceExchange::field(const sched::ServiceRate& r) const {
  const std::string_view tenant =
      r.tenant < config_.tenants.size() ? std::string_view(config_.tenants[r.tenant].name) : kAnonymousTenant;
  return fmt::format("{}{}{}{}{}", config_.models[r.pool].name, kSep, config_.classes[r.klass].name, kSep, tenant);
}

std::optional<sched::ServiceRate> ServiceExchange::parse(std::string_view f, double per_second) const {
  const std::string_view model = next_part(f), klass = next_part(f), tenant = f;
  std::optional<sched::ClassId> class_id;
  for (std::size_t c = 0; c < config_.classes.size(); ++c) {
    if (config_.classes[c].name == klass) class_id = static_cast<sched::ClassId>(c);
  }
  const auto t = tenant_ids_.find(tenant);
  if (!class_id || t == tenant_ids_.end()) return std::nullopt;  // another replica's config has it, ours not
  // The model's pool for the class, as the route stage picks it.
  const auto pools = pool_index_.find(std::string(model));
  if (pools == pool_index_.end()) return std::nullopt;
  const auto pool = static_cast<sched::PoolId>(class_pool(config_, pools->second, *class_id));
  return sched::ServiceRate{.pool = pool, .klass = *class_id, .tenant = t->second, .per_second = per_second};
}

void ServiceExchange::start() {
  loop_.start(executor_, kInterval, [this] { return exchange(); });
}

void ServiceExchange::stop() { loop_.stop(); }

Task<void> ServiceExchange::exchange() {
  const std::string prefix = config_.quota_store.key_prefix + ":svc:";
  std::vector<sched::ServiceRate> local;
  dispatcher_.inspect([&](const sched::Scheduler& s) { local = s.local_service(sched::Clock::now()); });
  std::vector<std::string> argv{"EVAL",  kExchangeScript, "2", prefix + replica_name(), prefix + "replicas", replica_name(),
                                std::to_string(kTtl.count()), prefix};
  for (const sched::ServiceRate& r : local) {
    argv.push_back(field(r));
    argv.push_back(fmt::format("{:.3f}", r.per_second));
  }
  const auto reply = co_await redis_.call(std::move(argv), config_.quota_store.timeout);
  std::vector<sched::ServiceRate> remote;
  if (reply && reply->type == RedisReply::Type::kArray) {
    failures_in_a_row_ = 0;
    exchanges_.fetch_add(1, std::memory_order_relaxed);
    for (std::size_t i = 0; i + 1 < reply->elements.size(); i += 2) {
      if (auto r = parse(reply->elements[i].text, std::stod(reply->elements[i + 1].text))) remote.push_back(*r);
    }
  } else if (++failures_in_a_row_ < 2) {
    co_return;  // the last figures stand for one more round
  }
  dispatcher_.update([&](sched::Scheduler& s) { s.set_remote_service(remote, kInterval); });
}

}  // namespace arbiter
