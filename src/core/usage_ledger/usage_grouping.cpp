#include "core/usage_ledger/usage_grouping.hpp"

#include <map>

namespace arbiter::usage {
namespace {

constexpr std::string_view kNames[] = {"tenant", "team", "model", "class"};

std::string_view value_of(const Names& names, UsageKey key, Dimension d) {
  switch (d) {
    case Dimension::kTenant: return names.tenants[key.tenant];
    case Dimension::kTeam: return names.teams[key.tenant];
    case Dimension::kModel: return names.models[key.model];
    case Dimension::kClass: return names.classes[key.klass];
  }
  return {};
}

}  // namespace

std::string_view dimension_name(Dimension d) { return kNames[static_cast<std::size_t>(d)]; }

std::optional<Dimension> dimension_named(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] == name) return static_cast<Dimension>(i);
  }
  return std::nullopt;
}

std::vector<ReportRow> group_usage(const UsageLedger& ledger, WallTime from, WallTime to, std::span<const Dimension> by) {
  std::map<std::vector<std::string_view>, UsageTotals> groups;  // views into the ledger's names
  std::vector<std::string_view> group(by.size());
  ledger.for_each(from, to, [&](WallTime, UsageKey key, const UsageTotals& totals) {
    for (std::size_t i = 0; i < by.size(); ++i) group[i] = value_of(ledger.names(), key, by[i]);
    groups[group] += totals;
  });
  std::vector<ReportRow> rows;
  rows.reserve(groups.size());
  for (const auto& [values, totals] : groups) {
    rows.push_back(ReportRow{.group = std::vector<std::string>(values.begin(), values.end()), .totals = totals});
  }
  return rows;
}

}  // namespace arbiter::usage
