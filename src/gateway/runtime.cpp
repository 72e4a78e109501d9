#include "gateway/runtime.hpp"

namespace arbiter {
namespace {

PoolIndex index_pools(const std::vector<ModelConfig>& models) {
  PoolIndex index;
  for (std::size_t i = 0; i < models.size(); ++i) index[models[i].name].push_back(i);
  return index;
}

StringMap<const rollout::AliasConfig*> index_aliases(const std::vector<rollout::AliasConfig>& aliases) {
  StringMap<const rollout::AliasConfig*> index;
  for (const rollout::AliasConfig& a : aliases) index.emplace(a.name, &a);
  return index;
}

StringMap<Runtime::AdapterRoute> index_adapters(const Config& config, const PoolIndex& pools) {
  StringMap<Runtime::AdapterRoute> index;
  for (std::size_t i = 0; i < config.adapters.size(); ++i) {
    const auto it = pools.find(config.adapters[i].model);
    if (it == pools.end()) continue;  // the config checked that its model is there
    index.emplace(config.adapters[i].name, Runtime::AdapterRoute{&it->second, static_cast<uint16_t>(i + 1)});
  }
  return index;
}

}  // namespace

Runtime::Runtime(Config c)
    : config(std::move(c)),
      tenants(config.tenants, config.auth.enabled),
      classifier(config.classes, config.default_class),
      pool_index(index_pools(config.models)),
      adapters(index_adapters(config, pool_index)),
      aliases(index_aliases(config.aliases)) {}

}  // namespace arbiter
