#include "gateway/observers/usage/usage_book.hpp"

#include "core/tenants.hpp"

namespace arbiter {

usage::Names usage_names(const Config& config) {
  usage::Names names;
  for (const TenantConfig& t : config.tenants) {
    names.tenants.push_back(t.name);
    names.teams.push_back(t.team);
  }
  names.tenants.emplace_back(kAnonymousTenant);
  names.teams.emplace_back(kAnonymousTenant);
  for (const ModelConfig& m : config.models) names.models.push_back(m.name);
  for (const ClassConfig& c : config.classes) names.classes.push_back(c.name);
  return names;
}

}  // namespace arbiter
