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

void UsageBook::seed(const std::vector<store::HourlyUsage>& hours) {
  usage::Names names;
  for (const store::HourlyUsage& h : hours) {
    names.tenants.push_back(h.tenant);
    names.teams.push_back(h.team);
    names.models.push_back(h.model);
    names.classes.push_back(h.klass);
  }
  std::lock_guard lock(mu_);
  const usage::NameIds ids = ledger_.adopt(names);
  for (std::size_t i = 0; i < hours.size(); ++i) {
    const store::HourlyUsage& h = hours[i];
    ledger_.record(usage::WallTime(std::chrono::milliseconds(h.hour_ms)),
                   {.tenant = ids.tenants[i], .model = static_cast<uint16_t>(ids.models[i]),
                    .klass = static_cast<uint16_t>(ids.classes[i])},
                   {.requests = h.requests,
                    .prompt_tokens = h.prompt_tokens,
                    .completion_tokens = h.completion_tokens,
                    .cached_tokens = h.cached_tokens,
                    .cost = h.cost});
  }
}

}  // namespace arbiter
