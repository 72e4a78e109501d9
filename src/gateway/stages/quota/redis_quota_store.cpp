#include "gateway/stages/quota/redis_quota_store.hpp"

#include "gateway/redis/replica_name.hpp"

#include <fmt/format.h>

namespace arbiter {

namespace {

// Both scripts read Redis's clock (TIME; allowed in scripts since Redis 5's
// effects replication) and keep the key only while the bucket is not full.
// ARGV: need, want, limit, period_ms. Returns {granted 0/1, units or wait
// ms, remaining, reset ms} as strings (Lua numbers would be truncated).
constexpr const char* kTakeScript = R"lua(
local need, want = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, period = tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = period / limit
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local available = (now + period - tat) / interval
if available + 1e-9 < need then
  return {'0', tostring((need - available) * interval), tostring(math.max(available, 0)), tostring(tat - now)}
end
local granted = math.min(want, available)
tat = tat + granted * interval
redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1)
return {'1', tostring(granted), tostring(available - granted), tostring(tat - now)}
)lua";

// ARGV: units (> 0 give back, < 0 charge), limit, period_ms.
constexpr const char* kAdjustScript = R"lua(
local units, limit, period = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if units < 0 and tat < now then tat = now end
tat = tat - units * period / limit
if tat <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1)
end
return 1
)lua";

// KEYS: the slot hash. ARGV: replica, need, want, max, liveness key prefix,
// TTL ms. Drops the fields of replicas whose liveness key is gone.
constexpr const char* kTakeSlotsScript = R"lua(
local replica, need, want, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local live, ttl = ARGV[5], tonumber(ARGV[6])
redis.call('SET', live .. replica, '1', 'PX', ttl)
local held = 0
local kv = redis.call('HGETALL', KEYS[1])
for i = 1, #kv, 2 do
  if redis.call('EXISTS', live .. kv[i]) == 1 then
    held = held + tonumber(kv[i + 1])
  else
    redis.call('HDEL', KEYS[1], kv[i])
  end
end
local available = max - held
if available < need then
  return {'0', '1000', tostring(math.max(available, 0)), '0'}
end
local granted = math.min(want, available)
redis.call('HINCRBYFLOAT', KEYS[1], replica, granted)
return {'1', tostring(granted), tostring(available - granted), '0'}
)lua";

// KEYS: the slot hash. ARGV: replica, slots handed back.
constexpr const char* kReleaseSlotsScript = R"lua(
local left = tonumber(redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1], -tonumber(ARGV[2])))
if left <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
return 1
)lua";

std::string number(double v) { return fmt::format("{:.6f}", v); }
std::string ms(quota::Duration d) { return number(std::chrono::duration<double, std::milli>(d).count()); }
quota::Duration from_ms(double v) {
  return std::chrono::duration_cast<quota::Duration>(std::chrono::duration<double, std::milli>(v));
}

std::expected<void, std::string> checked(const std::expected<RedisReply, std::string>& reply) {
  if (!reply) return std::unexpected(reply.error());
  if (reply->type == RedisReply::Type::kError) return std::unexpected(reply->text);
  return {};
}

// Both take scripts answer {granted 0/1, units or wait ms, remaining, reset ms}.
std::expected<LeaseAnswer, std::string> lease_answer(const std::expected<RedisReply, std::string>& reply) {
  if (auto ok = checked(reply); !ok) return std::unexpected(ok.error());
  if (reply->type != RedisReply::Type::kArray || reply->elements.size() != 4) {
    return std::unexpected(std::string("unexpected reply to a take script"));
  }
  const auto& e = reply->elements;
  LeaseAnswer a;
  a.granted = e[0].text == "1";
  const double value = std::stod(e[1].text);
  if (a.granted) {
    a.units = value;
  } else {
    a.wait = from_ms(value);
  }
  a.remaining = std::stod(e[2].text);
  a.reset = from_ms(std::stod(e[3].text));
  return a;
}

}  // namespace

RedisQuotaStore::RedisQuotaStore(net::any_io_executor executor, const quota::QuotaStoreConfig& config)
    : connection_(executor, *parse_redis_address(config.redis)),  // checked by the config loader
      timeout_(config.timeout),
      live_prefix_(config.key_prefix + ":live:"),
      // Several heartbeats' worth (the maintenance loop's period is a
      // quarter of lease_idle): a live replica never lapses between two.
      live_ttl_(std::max<std::chrono::milliseconds>(config.lease_idle * 3, std::chrono::seconds(1))) {}

Task<std::expected<LeaseAnswer, std::string>> RedisQuotaStore::take(const std::string& key, double need, double want,
                                                                    double limit, quota::Duration period) {
  // Named, not a braced temporary, in a co_await: GCC 12 miscompiles those.
  std::vector<std::string> argv{"EVAL", kTakeScript, "1", key, number(need), number(want), number(limit), ms(period)};
  co_return lease_answer(co_await connection_.call(std::move(argv), timeout_));
}

Task<std::expected<void, std::string>> RedisQuotaStore::adjust(const std::string& key, double units, double limit,
                                                               quota::Duration period) {
  std::vector<std::string> argv{"EVAL", kAdjustScript, "1", key, number(units), number(limit), ms(period)};
  co_return checked(co_await connection_.call(std::move(argv), timeout_));
}

Task<std::expected<LeaseAnswer, std::string>> RedisQuotaStore::take_slots(const std::string& key, double need,
                                                                          double want, double max) {
  std::vector<std::string> argv{"EVAL",       kTakeSlotsScript, "1",          key,
                                replica_name(), number(need),     number(want), number(max),
                                live_prefix_, std::to_string(live_ttl_.count())};
  co_return lease_answer(co_await connection_.call(std::move(argv), timeout_));
}

Task<std::expected<void, std::string>> RedisQuotaStore::release_slots(const std::string& key, double n) {
  std::vector<std::string> argv{"EVAL", kReleaseSlotsScript, "1", key, replica_name(), number(n)};
  co_return checked(co_await connection_.call(std::move(argv), timeout_));
}

Task<std::expected<void, std::string>> RedisQuotaStore::heartbeat() {
  std::vector<std::string> argv{"SET", live_prefix_ + replica_name(), "1", "PX", std::to_string(live_ttl_.count())};
  co_return checked(co_await connection_.call(std::move(argv), timeout_));
}

Task<std::expected<void, std::string>> RedisQuotaStore::ping() {
  std::vector<std::string> argv{"PING"};
  co_return checked(co_await connection_.call(std::move(argv), timeout_));
}

}  // namespace arbiter
