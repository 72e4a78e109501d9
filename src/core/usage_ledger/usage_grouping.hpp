// The usage report's rows (GET /admin/usage; docs/usage.md): the ledger's
// buckets over a time range added up per group, a group being the values
// of the chosen dimensions (tenant, team, model, class).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/usage_ledger/usage_ledger.hpp"

namespace arbiter::usage {

enum class Dimension : uint8_t { kTenant, kTeam, kModel, kClass };

std::string_view dimension_name(Dimension d);                  // "tenant", "team", "model", "class"
std::optional<Dimension> dimension_named(std::string_view name);

struct ReportRow {
  std::vector<std::string> group;  // one value per dimension grouped by, in that order
  UsageTotals totals;
};

// The totals of the hours that start in [from, to), one row per group with
// usage, ordered by group.
std::vector<ReportRow> group_usage(const UsageLedger& ledger, WallTime from, WallTime to, std::span<const Dimension> by);

}  // namespace arbiter::usage
