#include "gateway/stages/quota/quota_config_section.hpp"

#include "core/quota/traffic_breaker.hpp"
#include "gateway/redis/redis_connection.hpp"
#include "yaml/setting_rows.hpp"

namespace arbiter {
namespace {

using namespace setting_rows;

using QS = quota::QuotaStoreConfig;
constexpr SettingKey<QS> kQuotaStoreKeys[] = {
    {"redis", "host:port of a Redis server (empty: in-process)", read_text<QS, &QS::redis>, write_text<QS, &QS::redis>},
    {"timeout_ms", "milliseconds in [1, 10000]", read_ms<QS, &QS::timeout, 1, 10'000>, write_ms<QS, &QS::timeout>},
    {"replicas", "integer in [1, 1000]", read_integer<QS, &QS::replicas, 1, 1000>, write_integer<QS, &QS::replicas>},
    {"lease_share", "number in [0, 0.5]", read_number<QS, &QS::lease_share, 0.0, 0.5>,
     write_number<QS, &QS::lease_share>},
    {"lease_idle_ms", "milliseconds in [1, 3600000]", read_ms<QS, &QS::lease_idle, 1, 3'600'000>,
     write_ms<QS, &QS::lease_idle>},
    {"key_prefix", "text", read_text<QS, &QS::key_prefix>, write_text<QS, &QS::key_prefix>},
};

using TB = quota::TrafficBreakerConfig;
constexpr SettingKey<TB> kTrafficBreakerKeys[] = {
    {"enabled", "true or false", read_bool<TB, &TB::enabled>, write_bool<TB, &TB::enabled>},
    {"throttle_at", "number in [1, 100]", read_number<TB, &TB::throttle_at, 1.0, 100.0>,
     write_number<TB, &TB::throttle_at>},
    {"degrade_at", "number in [1, 100]", read_number<TB, &TB::degrade_at, 1.0, 100.0>,
     write_number<TB, &TB::degrade_at>},
    {"block_at", "number in [1, 100]", read_number<TB, &TB::block_at, 1.0, 100.0>, write_number<TB, &TB::block_at>},
    {"window_ms", "milliseconds in [100, 3600000]", read_ms<TB, &TB::window, 100, 3'600'000>,
     write_ms<TB, &TB::window>},
    {"hold_ms", "milliseconds in [0, 3600000]", read_ms<TB, &TB::hold, 0, 3'600'000>, write_ms<TB, &TB::hold>},
    {"base_backoff_ms", "milliseconds in [1, 3600000]", read_ms<TB, &TB::base_backoff, 1, 3'600'000>,
     write_ms<TB, &TB::base_backoff>},
    {"max_backoff_ms", "milliseconds in [1, 86400000]", read_ms<TB, &TB::max_backoff, 1, kDayMs>,
     write_ms<TB, &TB::max_backoff>},
    {"probe_every", "integer in [1, 10000]", read_integer<TB, &TB::probe_every, 1, 10'000>,
     write_integer<TB, &TB::probe_every>},
    {"degrade_max_tokens", "integer in [1, 1000000]", read_integer<TB, &TB::degrade_max_tokens, 1, 1'000'000>,
     write_integer<TB, &TB::degrade_max_tokens>},
    {"degrade_class", "a class name (empty: none)", read_text<TB, &TB::degrade_class>,
     write_text<TB, &TB::degrade_class>},
};

// quota_store.redis is host:port.
void check_quota_store(YamlReader& r, std::string_view section, const Config& c) {
  if (!c.quota_store.redis.empty() && !parse_redis_address(c.quota_store.redis)) {
    r.error(std::string(section) + ".redis", "must be host:port, e.g. 127.0.0.1:6379");
  }
}

void check_traffic_breaker(YamlReader& r, std::string_view section, const Config& c) {
  if (auto why = quota::validate(c.traffic_breaker)) r.error(std::string(section), *why);
}

}  // namespace

std::span<const SettingKey<quota::QuotaStoreConfig>> quota_store_keys() { return kQuotaStoreKeys; }
std::span<const SettingKey<quota::TrafficBreakerConfig>> traffic_breaker_keys() { return kTrafficBreakerKeys; }

ConfigSection quota_store_section() {
  return flat_section<quota::QuotaStoreConfig, &Config::quota_store, quota_store_keys, check_quota_store>(
      "quota_store");
}

ConfigSection traffic_breaker_section() {
  return flat_section<quota::TrafficBreakerConfig, &Config::traffic_breaker, traffic_breaker_keys,
                      check_traffic_breaker>("traffic_breaker");
}

}  // namespace arbiter
