#include "gateway/admin/usage_query.hpp"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "gateway/admin/percent_decode.hpp"

namespace arbiter {
namespace {

using namespace std::chrono;

constexpr int64_t kLastSecond = 7'258'118'400;  // 2200-01-01T00:00:00Z: far inside the clock's range

// Exactly `n` digits of `s` at `at`.
std::optional<int> digits(std::string_view s, std::size_t at, std::size_t n) {
  if (at + n > s.size()) return std::nullopt;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

std::optional<usage::WallTime> unix_seconds(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || s.front() == '-' || ec != std::errc{} || end != s.data() + s.size() || v > kLastSecond) {
    return std::nullopt;
  }
  return usage::WallTime{} + seconds(v);
}

// The offset of an RFC 3339 time at the end of `s` from `at` ("Z",
// "+02:00"): what to subtract to get UTC.
std::optional<minutes> utc_offset(std::string_view s, std::size_t at) {
  if (s.size() == at + 1 && (s[at] == 'Z' || s[at] == 'z')) return minutes(0);
  if (s.size() != at + 6 || (s[at] != '+' && s[at] != '-') || s[at + 3] != ':') return std::nullopt;
  const auto h = digits(s, at + 1, 2), m = digits(s, at + 4, 2);
  if (!h || !m || *h > 23 || *m > 59) return std::nullopt;
  const minutes offset = hours(*h) + minutes(*m);
  return s[at] == '-' ? -offset : offset;
}

std::optional<usage::WallTime> rfc3339(std::string_view s) {
  const auto y = digits(s, 0, 4), mo = digits(s, 5, 2), d = digits(s, 8, 2);
  const auto h = digits(s, 11, 2), mi = digits(s, 14, 2), sec = digits(s, 17, 2);
  if (!y || !mo || !d || !h || !mi || !sec || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':' || *h > 23 || *mi > 59 || *sec > 59) {
    return std::nullopt;
  }
  const year_month_day date{year(*y), month(static_cast<unsigned>(*mo)), day(static_cast<unsigned>(*d))};
  if (!date.ok()) return std::nullopt;
  std::size_t at = 19;
  nanoseconds fraction{0};
  if (at < s.size() && s[at] == '.') {
    const std::size_t first = ++at;
    for (int64_t scale = 100'000'000; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, scale /= 10) {
      fraction += nanoseconds((s[at] - '0') * scale);  // digits past nanoseconds add 0
    }
    if (at == first) return std::nullopt;
  }
  const auto offset = utc_offset(s, at);
  if (!offset) return std::nullopt;
  const usage::WallTime t = sys_days(date) + hours(*h) + minutes(*mi) + seconds(*sec) + fraction - *offset;
  if (t < usage::WallTime{} || t > usage::WallTime{} + seconds(kLastSecond)) return std::nullopt;
  return t;
}

usage::WallTime hour_up(usage::WallTime t) {
  const usage::WallTime down = usage::hour_of(t);
  return down == t ? t : down + hours(1);
}

std::expected<std::vector<usage::Dimension>, std::string> dimensions(std::string_view list) {
  std::vector<usage::Dimension> out;
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view name = list.substr(start, comma - start);
    const auto d = usage::dimension_named(name);
    if (!d) return std::unexpected(fmt::format("group_by: '{}' is not tenant, team, model or class", name));
    if (std::ranges::find(out, *d) != out.end()) return std::unexpected(fmt::format("group_by: '{}' twice", name));
    out.push_back(*d);
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::optional<usage::WallTime> parse_wall_time(std::string_view text) {
  if (auto t = unix_seconds(text)) return t;
  return rfc3339(text);
}

std::string format_wall_time(usage::WallTime t) {
  // By hand: fmt 9 writes a system_clock time in the local time zone.
  const sys_days day = floor<days>(t);
  const year_month_day date(day);
  const hh_mm_ss time(floor<seconds>(t - day));
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()), time.hours().count(),
                     time.minutes().count(), time.seconds().count());
}

std::expected<UsageQuery, std::string> parse_usage_query(std::string_view query, usage::WallTime now) {
  std::map<std::string, std::string, std::less<>> params;
  for (std::size_t start = 0; start < query.size();) {
    const std::size_t amp = std::min(query.find('&', start), query.size());
    const std::string_view pair = query.substr(start, amp - start);
    const std::size_t eq = std::min(pair.find('='), pair.size());
    auto key = percent_decoded(pair.substr(0, eq));
    auto value = percent_decoded(pair.substr(std::min(eq + 1, pair.size())));
    if (!key || !value) return std::unexpected("the query is not percent-encoded text");
    if (!params.emplace(*key, std::move(*value)).second) return std::unexpected(fmt::format("{}: given twice", *key));
    start = amp + 1;
  }
  auto param = [&](std::string_view key) -> const std::string* {
    const auto it = params.find(key);
    return it == params.end() ? nullptr : &it->second;
  };
  for (const auto& [key, value] : params) {
    if (key != "from" && key != "to" && key != "group_by" && key != "format") {
      return std::unexpected(fmt::format("unknown parameter '{}' (from, to, group_by, format)", key));
    }
  }
  auto time = [&](std::string_view key, usage::WallTime fallback) -> std::expected<usage::WallTime, std::string> {
    const std::string* text = param(key);
    if (!text) return fallback;
    if (auto t = parse_wall_time(*text)) return *t;
    return std::unexpected(fmt::format("{}: '{}' is not an RFC 3339 time (2024-05-01T10:00:00Z) or unix seconds", key, *text));
  };
  const auto to = time("to", now);
  if (!to) return std::unexpected(to.error());
  const auto from = time("from", *to - hours(24));
  if (!from) return std::unexpected(from.error());
  UsageQuery q{.from = usage::hour_of(*from), .to = hour_up(*to), .group_by = {usage::Dimension::kTenant}};
  if (*from >= *to) return std::unexpected("from must be before to");
  if (const std::string* by = param("group_by")) {
    auto dims = dimensions(*by);
    if (!dims) return std::unexpected(dims.error());
    q.group_by = std::move(*dims);
  }
  if (const std::string* format = param("format")) {
    if (*format == "csv") {
      q.format = UsageQuery::Format::kCsv;
    } else if (*format != "json") {
      return std::unexpected(fmt::format("format: '{}' is not json or csv", *format));
    }
  }
  return q;
}

}  // namespace arbiter
