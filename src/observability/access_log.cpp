#include "observability/access_log.hpp"

#include <fmt/compile.h>

namespace arbiter {

namespace {

void put(fmt::memory_buffer& out, std::string_view text) { out.append(text.data(), text.data() + text.size()); }

void put_two_digits(fmt::memory_buffer& out, unsigned v) {
  const char d[2] = {static_cast<char>('0' + v / 10 % 10), static_cast<char>('0' + v % 10)};
  out.append(d, d + 2);
}

// "2026-01-31T23:59:59Z": the UTC calendar date and time of day.
void put_utc(fmt::memory_buffer& out, std::chrono::system_clock::time_point ts) {
  using namespace std::chrono;
  const auto secs = floor<seconds>(ts);
  const auto day = floor<days>(secs);
  const year_month_day date(day);
  const hh_mm_ss time(secs - day);
  const int y = static_cast<int>(date.year());
  put_two_digits(out, static_cast<unsigned>(y / 100));
  put_two_digits(out, static_cast<unsigned>(y % 100));
  out.push_back('-');
  put_two_digits(out, static_cast<unsigned>(date.month()));
  out.push_back('-');
  put_two_digits(out, static_cast<unsigned>(date.day()));
  out.push_back('T');
  put_two_digits(out, static_cast<unsigned>(time.hours().count()));
  out.push_back(':');
  put_two_digits(out, static_cast<unsigned>(time.minutes().count()));
  out.push_back(':');
  put_two_digits(out, static_cast<unsigned>(time.seconds().count()));
  out.push_back('Z');
}

// `text` as a JSON string, quotes included, escaped as Boost.JSON's
// serializer escapes it (the line's format before it was hand-written).
void append_json_string(std::string_view text, fmt::memory_buffer& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  const char* run = text.data();  // bytes copied as they are, in runs
  const char* const end = text.data() + text.size();
  for (const char* p = run; p != end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(run, p);
    run = p + 1;
    out.push_back('\\');
    switch (c) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '\b': out.push_back('b'); break;
      case '\t': out.push_back('t'); break;
      case '\n': out.push_back('n'); break;
      case '\f': out.push_back('f'); break;
      case '\r': out.push_back('r'); break;
      default: {
        const char u[5] = {'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out.append(u, u + 5);
      }
    }
  }
  out.append(run, end);
  out.push_back('"');
}

// `key` is the field's name with its punctuation: ,"name":
void put_text(fmt::memory_buffer& out, std::string_view key, std::string_view v) {
  put(out, key);
  append_json_string(v, out);
}

void put_int(fmt::memory_buffer& out, std::string_view key, int64_t v) {
  put(out, key);
  const fmt::format_int digits(v);
  out.append(digits.data(), digits.data() + digits.size());
}

void put_ms(fmt::memory_buffer& out, std::string_view key, double v) {
  put(out, key);
  fmt::format_to(fmt::appender(out), FMT_COMPILE("{:.3f}"), v);
}

}  // namespace

void append_access_line(const AccessRecord& r, fmt::memory_buffer& out) {
  put(out, R"({"ts":")");
  put_utc(out, r.ts);
  out.push_back('"');
  put_text(out, R"(,"request_id":)", r.request_id);
  put_text(out, R"(,"tenant":)", r.tenant);
  put_text(out, R"(,"team":)", r.team);
  put_text(out, R"(,"class":)", r.cls);
  put_text(out, R"(,"model":)", r.model);
  put_text(out, R"(,"backend":)", r.backend);
  put_text(out, R"(,"route":)", r.route);
  put_int(out, R"(,"status":)", r.status);
  put(out, r.stream ? R"(,"stream":true)" : R"(,"stream":false)");
  put_int(out, R"(,"bytes_in":)", static_cast<int64_t>(r.bytes_in));
  put_int(out, R"(,"bytes_out":)", static_cast<int64_t>(r.bytes_out));
  put_ms(out, R"(,"queue_ms":)", r.queue_ms);
  if (!r.wait_reason.empty()) put_text(out, R"(,"wait_reason":)", r.wait_reason);
  if (r.upstream_ms >= 0) put_ms(out, R"(,"upstream_ms":)", r.upstream_ms);
  if (r.ttfb_ms >= 0) put_ms(out, R"(,"ttfb_ms":)", r.ttfb_ms);
  if (r.preemptions > 0) put_int(out, R"(,"preemptions":)", r.preemptions);
  if (r.prompt_tokens >= 0) {
    put_int(out, R"(,"prompt_tokens":)", r.prompt_tokens);
    put_int(out, R"(,"completion_tokens":)", r.completion_tokens);
    put_int(out, R"(,"cached_tokens":)", r.cached_tokens);
  }
  if (r.engine_ms >= 0) put_ms(out, R"(,"engine_ms":)", r.engine_ms);
  if (r.cost >= 0) {  // the shortest text that reads back exactly
    put(out, R"(,"cost":)");
    fmt::format_to(fmt::appender(out), FMT_COMPILE("{}"), r.cost);
  }
  put_ms(out, R"(,"duration_ms":)", r.duration_ms);
  if (!r.error.empty()) put_text(out, R"(,"error":)", r.error);
  put(out, "}\n");
}

}  // namespace arbiter
