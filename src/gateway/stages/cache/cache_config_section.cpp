#include "gateway/stages/cache/cache_config_section.hpp"

#include <algorithm>

#include "core/cache/result_store.hpp"
#include "gateway/redis/redis_connection.hpp"

namespace arbiter {
namespace {

// An entry must fit a shard of the store; the looser near-duplicate match
// is the degraded one.
void check_cache(YamlReader& r, std::string_view section, const Config& c) {
  const cache::CacheConfig& k = c.cache;
  constexpr std::size_t kShards = 16;  // ResultStore's default
  if (k.max_entry_bytes + cache::ResultStore::kEntryOverhead > k.max_bytes / kShards) {
    r.error(std::string(section) + ".max_entry_bytes", "must be under a sixteenth of max_bytes");
  }
  if (!k.redis.empty() && !parse_redis_address(k.redis)) {
    r.error(std::string(section) + ".redis", "must be host:port");
  }
  if (k.near_degraded_threshold > k.near_threshold) {
    r.error(std::string(section) + ".near_degraded_threshold", "must not exceed near_threshold");
  }
  if (k.semantic_degraded_threshold > k.semantic_threshold) {
    r.error(std::string(section) + ".semantic_degraded_threshold", "must not exceed semantic_threshold");
  }
  if (!k.semantic_model.empty() &&
      std::none_of(c.models.begin(), c.models.end(), [&](const ModelConfig& m) { return m.name == k.semantic_model; })) {
    r.error(std::string(section) + ".semantic_model", "names no model of models: (its engines serve /v1/embeddings)");
  }
}

}  // namespace

ConfigSection cache_section() {
  return flat_section<cache::CacheConfig, &Config::cache, cache_keys, check_cache>("cache");
}

}  // namespace arbiter
