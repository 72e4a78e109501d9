// The body of GET /admin/usage (docs/usage.md): the grouped rows of the
// usage ledger as JSON (with the range, the grouping and a total) or CSV
// (a header line, then one line per group).
#pragma once

#include <string>
#include <vector>

#include "core/usage_ledger/usage_grouping.hpp"
#include "gateway/admin/usage_query.hpp"

namespace arbiter {

std::string usage_json(const UsageQuery& query, const std::vector<usage::ReportRow>& rows);
std::string usage_csv(const UsageQuery& query, const std::vector<usage::ReportRow>& rows);

}  // namespace arbiter
