// The parameters of GET /admin/usage (docs/usage.md): from, to (RFC 3339
// or unix seconds), group_by (tenant, team, model, class, or several
// comma-separated) and format (json or csv). Every problem is a message
// for a 400 answer.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/usage_ledger/usage_grouping.hpp"

namespace arbiter {

struct UsageQuery {
  enum class Format : uint8_t { kJson, kCsv };
  // Whole hours: `from` rounded down to its hour, `to` up to the next
  // (the report's buckets are hours).
  usage::WallTime from, to;
  std::vector<usage::Dimension> group_by;  // default: tenant
  Format format = Format::kJson;
};

// `query`: the target's text after '?', percent-encoded ('+' stays '+':
// an RFC 3339 offset may come unencoded). Defaults: to = now, from = to -
// 24 h.
std::expected<UsageQuery, std::string> parse_usage_query(std::string_view query, usage::WallTime now);

// "2024-05-01T10:00:00Z", "2024-05-01T12:00:00.5+02:00" (RFC 3339; 't' and
// 'z' too) or "1714557600" (unix seconds), from 1970 to 2200; nullopt
// otherwise.
std::optional<usage::WallTime> parse_wall_time(std::string_view text);

// "2024-05-01T10:00:00Z".
std::string format_wall_time(usage::WallTime t);

}  // namespace arbiter
