#include "gateway/admin/usage_report.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>
#include <fmt/format.h>

namespace arbiter {
namespace {

using Out = std::back_insert_iterator<std::string>;

std::string quoted(std::string_view v) { return boost::json::serialize(boost::json::string_view(v)); }

// A CSV field: quoted (quotes doubled) when it holds a comma, quote or line break.
std::string csv_field(std::string_view v) {
  if (v.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(v);
  std::string out = "\"";
  for (const char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The numbers of a row, for JSON after its group's keys. Costs as the
// shortest text that reads back exactly.
void json_totals(Out out, const usage::UsageTotals& t) {
  fmt::format_to(out, R"("requests":{},"prompt_tokens":{},"completion_tokens":{},"cached_tokens":{},"cost":{}}})",
                 t.requests, t.prompt_tokens, t.completion_tokens, t.cached_tokens, t.cost);
}

}  // namespace

std::string usage_json(const UsageQuery& query, const std::vector<usage::ReportRow>& rows) {
  std::string body;
  const Out out(body);
  fmt::format_to(out, R"({{"from":"{}","to":"{}","group_by":[)", format_wall_time(query.from), format_wall_time(query.to));
  for (std::size_t i = 0; i < query.group_by.size(); ++i) {
    fmt::format_to(out, R"({}"{}")", i ? "," : "", usage::dimension_name(query.group_by[i]));
  }
  body += R"(],"rows":[)";
  usage::UsageTotals total;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    body += r ? ",{" : "{";
    for (std::size_t i = 0; i < query.group_by.size(); ++i) {
      fmt::format_to(out, R"("{}":{},)", usage::dimension_name(query.group_by[i]), quoted(rows[r].group[i]));
    }
    json_totals(out, rows[r].totals);
    total += rows[r].totals;
  }
  body += R"(],"total":{)";
  json_totals(out, total);
  body += "}\n";
  return body;
}

std::string usage_csv(const UsageQuery& query, const std::vector<usage::ReportRow>& rows) {
  std::string body;
  const Out out(body);
  for (const usage::Dimension d : query.group_by) fmt::format_to(out, "{},", usage::dimension_name(d));
  body += "requests,prompt_tokens,completion_tokens,cached_tokens,cost\n";
  for (const usage::ReportRow& row : rows) {
    for (const std::string& value : row.group) fmt::format_to(out, "{},", csv_field(value));
    const usage::UsageTotals& t = row.totals;
    fmt::format_to(out, "{},{},{},{},{}\n", t.requests, t.prompt_tokens, t.completion_tokens, t.cached_tokens, t.cost);
  }
  return body;
}

}  // namespace arbiter
