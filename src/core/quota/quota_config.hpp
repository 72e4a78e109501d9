// What a tenant's or a team's quota says (config: tenants[].quotas,
// teams[].quotas; docs/quotas.md). Each entry is one set of limits over the
// requests it covers: all of the owner's, or only those of some classes or
// models. A request is charged to every entry that covers it, its tenant's
// and its team's alike, and admitted only when all of them have room.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter::quota {

struct QuotaLimits {
  std::optional<double> requests_per_minute;
  std::optional<double> tokens_per_minute;  // reserved at admission, reconciled with usage
  std::optional<double> tokens_per_day;
  std::optional<uint32_t> max_concurrent;   // requests admitted and not yet ended
  std::vector<std::string> classes;         // empty: every class
  std::vector<std::string> models;          // empty: every model

  bool covers(std::string_view klass, std::string_view model) const;
  bool limits_anything() const {
    return requests_per_minute || tokens_per_minute || tokens_per_day || max_concurrent;
  }
};

struct TeamConfig {
  std::string name;
  std::vector<QuotaLimits> quotas;  // shared by every tenant of the team
};

}  // namespace arbiter::quota
