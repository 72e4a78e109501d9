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

}  // namespace

Runtime::Runtime(Config c)
    : config(std::move(c)),
      tenants(config.tenants, config.auth.enabled),
      classifier(config.classes, config.default_class),
      pool_index(index_pools(config.models)),
      aliases(index_aliases(config.aliases)) {}

}  // namespace arbiter
