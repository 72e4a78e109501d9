#include "observability/access_log.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/compile.h>

#include "core/decimal.hpp"
#include "core/word_bytes.hpp"
#include "observability/json_escape.hpp"

namespace arbiter {

namespace {

// The line is written through a raw pointer into room reserved up front
// (kMaxNumber per number, the worst escaping per string): a few thousand
// instructions less per line than appending piece by piece.
constexpr std::size_t kMaxNumber = 330;  // a double in fixed notation, 3 decimals, at its largest

char* put(char* p, std::string_view text) {
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

char* put_two_digits(char* p, unsigned v) {
  p[0] = static_cast<char>('0' + v / 10 % 10);
  p[1] = static_cast<char>('0' + v % 10);
  return p + 2;
}

// "2026-01-31T23:59:59Z": the UTC calendar date and time of day.
char* put_utc(char* p, std::chrono::sys_seconds secs) {
  using namespace std::chrono;
  const auto day = floor<days>(secs);
  const year_month_day date(day);
  const hh_mm_ss time(secs - day);
  const int y = static_cast<int>(date.year());
  p = put_two_digits(p, static_cast<unsigned>(y / 100));
  p = put_two_digits(p, static_cast<unsigned>(y % 100));
  *p++ = '-';
  p = put_two_digits(p, static_cast<unsigned>(date.month()));
  *p++ = '-';
  p = put_two_digits(p, static_cast<unsigned>(date.day()));
  *p++ = 'T';
  p = put_two_digits(p, static_cast<unsigned>(time.hours().count()));
  *p++ = ':';
  p = put_two_digits(p, static_cast<unsigned>(time.minutes().count()));
  *p++ = ':';
  p = put_two_digits(p, static_cast<unsigned>(time.seconds().count()));
  *p++ = 'Z';
  return p;
}

// The last second this thread formatted and its text: consecutive lines
// mostly fall in the same second, so the calendar arithmetic runs about once
// a second rather than once a line.
class UtcSecondText {
 public:
  std::string_view of(std::chrono::system_clock::time_point ts) {
    const auto secs = std::chrono::floor<std::chrono::seconds>(ts);
    if (secs.time_since_epoch().count() != second_) {
      put_utc(text_, secs);
      second_ = secs.time_since_epoch().count();
    }
    return {text_, sizeof text_};
  }

 private:
  int64_t second_ = std::numeric_limits<int64_t>::min();  // no time_point floors to it
  char text_[20] = {};
};

uint64_t load4(const char* s) {
  uint32_t w;
  std::memcpy(&w, s, 4);
  return w;
}

// Copies `text` to `p` 8 bytes at a time (the last word overlapping the one
// before it) while checking each word, with no call and no byte loop: the
// common case of a clean name or id. Returns false, with `p` partly
// written, if any byte needs escaping.
bool put_clean(char* p, std::string_view text) {
  const char* s = text.data();
  const std::size_t n = text.size();
  if (n >= 8) {
    uint64_t flagged = 0;
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      const uint64_t w = load8(s + i);
      flagged |= escape_bits(w);
      std::memcpy(p + i, &w, 8);
    }
    const uint64_t last = load8(s + n - 8);
    std::memcpy(p + n - 8, &last, 8);
    return (flagged | escape_bits(last)) == 0;
  }
  if (n >= 4) {
    const auto lo = static_cast<uint32_t>(load4(s));
    const auto hi = static_cast<uint32_t>(load4(s + n - 4));
    std::memcpy(p, &lo, 4);
    std::memcpy(p + n - 4, &hi, 4);
    return escape_bits(lo | uint64_t{hi} << 32) == 0;
  }
  if (n == 0) return true;
  p[0] = s[0];  // 1 to 3 bytes: the first, the middle and the last
  p[n / 2] = s[n / 2];
  p[n - 1] = s[n - 1];
  const uint64_t w = static_cast<unsigned char>(s[0]) | uint64_t{static_cast<unsigned char>(s[n / 2])} << 8 |
                     uint64_t{static_cast<unsigned char>(s[n - 1])} << 16 | 0x6161616161000000;  // 'a's: clean
  return escape_bits(w) == 0;
}

// `text` as a JSON string, quotes included.
char* put_json_string(char* p, std::string_view text) {
  *p++ = '"';
  if (put_clean(p, text)) [[likely]] {
    p += text.size();
  } else {
    p = put_json_escaped(p, text);  // the rare string put_clean declines
  }
  *p++ = '"';
  return p;
}

// v x 1000 rounded to an integer, half to even, exactly, for 0 <= v < 1e12:
// v's 53-bit significand times 1000 fits 63 bits, and v's binary exponent is
// then at most -13 (v < 2^40), so the product is shifted down and the bits
// shifted out decide the rounding. Integer work only.
uint64_t rounded_thousandths(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const auto biased_exponent = static_cast<int>(bits >> 52);  // the sign bit is 0
  uint64_t significand = bits & ((uint64_t{1} << 52) - 1);
  int exponent = -1074;  // a subnormal's
  if (biased_exponent != 0) {
    significand |= uint64_t{1} << 52;
    exponent = biased_exponent - 1075;
  }
  const uint64_t product = significand * 1000;
  const int shift = -exponent;
  if (shift >= 64) return 0;  // the product, under 2^63, is less than half of 2^shift
  const uint64_t whole = product >> shift;
  const uint64_t rest = product & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  return whole + static_cast<uint64_t>(rest > half || (rest == half && (whole & 1)));
}

// `v` to 3 decimals, exactly as fmt's "{:.3f}" writes it: the exact binary
// value rounded half to even. Outside the usual range, std::to_chars, which
// rounds the same.
char* put_ms(char* p, double v) {
  if (!(v >= 0 && v < 1e12) || std::signbit(v)) {
    return std::to_chars(p, p + kMaxNumber, v, std::chars_format::fixed, 3).ptr;
  }
  const uint64_t n = rounded_thousandths(v);
  p = put_uint(p, n / 1000);
  *p++ = '.';
  const auto frac = static_cast<unsigned>(n % 1000);
  *p++ = static_cast<char>('0' + frac / 100);
  return put_two_digits(p, frac % 100);
}

// `key` is the field's name with its punctuation: ,"name":
char* put_text(char* p, std::string_view key, std::string_view v) { return put_json_string(put(p, key), v); }
char* put_int(char* p, std::string_view key, int64_t v) { return arbiter::put_int(put(p, key), v); }
char* put_ms(char* p, std::string_view key, double v) { return put_ms(put(p, key), v); }

}  // namespace

void append_access_line(const AccessRecord& r, fmt::memory_buffer& out) {
  const std::string_view texts[] = {r.request_id, r.tenant, r.team,        r.cls,     r.model,
                                    r.backend,    r.route,  r.error,       r.wait_reason, r.degraded,
                                    r.config,     r.tokens_from};
  std::size_t room = 512 + 8 * kMaxNumber;  // the keys and every number at its longest
  for (const std::string_view t : texts) room += kJsonEscapedMaxPerByte * t.size() + 2;
  const std::size_t start = out.size();
  out.resize(start + room);  // no fill: the bytes are written below
  char* const begin = out.data() + start;
  thread_local UtcSecondText utc;
  char* p = put(begin, R"({"ts":")");
  p = put(p, utc.of(r.ts));
  *p++ = '"';
  p = put_text(p, R"(,"request_id":)", r.request_id);
  p = put_text(p, R"(,"tenant":)", r.tenant);
  p = put_text(p, R"(,"team":)", r.team);
  p = put_text(p, R"(,"class":)", r.cls);
  p = put_text(p, R"(,"model":)", r.model);
  p = put_text(p, R"(,"backend":)", r.backend);
  p = put_text(p, R"(,"route":)", r.route);
  p = put_int(p, R"(,"status":)", r.status);
  p = put(p, r.stream ? R"(,"stream":true)" : R"(,"stream":false)");
  p = put_int(p, R"(,"bytes_in":)", static_cast<int64_t>(r.bytes_in));
  p = put_int(p, R"(,"bytes_out":)", static_cast<int64_t>(r.bytes_out));
  p = put_ms(p, R"(,"queue_ms":)", r.queue_ms);
  if (!r.wait_reason.empty()) {  // one of the scheduler's fixed names: nothing to escape
    p = put(p, R"(,"wait_reason":")");
    p = put(p, r.wait_reason);
    *p++ = '"';
  }
  if (r.upstream_ms >= 0) p = put_ms(p, R"(,"upstream_ms":)", r.upstream_ms);
  if (r.ttfb_ms >= 0) p = put_ms(p, R"(,"ttfb_ms":)", r.ttfb_ms);
  if (r.preemptions > 0) p = put_int(p, R"(,"preemptions":)", r.preemptions);
  if (r.prompt_tokens >= 0) {
    p = put_int(p, R"(,"prompt_tokens":)", r.prompt_tokens);
    p = put_int(p, R"(,"completion_tokens":)", r.completion_tokens);
    p = put_int(p, R"(,"cached_tokens":)", r.cached_tokens);
    if (!r.tokens_from.empty()) {  // a fixed name: nothing to escape
      p = put(p, R"(,"tokens_from":")");
      p = put(p, r.tokens_from);
      *p++ = '"';
    }
  }
  if (r.engine_ms >= 0) p = put_ms(p, R"(,"engine_ms":)", r.engine_ms);
  if (r.cost >= 0) {  // the shortest text that reads back exactly
    p = put(p, R"(,"cost":)");
    p = fmt::format_to(p, FMT_COMPILE("{}"), r.cost);
  }
  p = put_ms(p, R"(,"duration_ms":)", r.duration_ms);
  if (!r.error.empty()) p = put_text(p, R"(,"error":)", r.error);
  if (!r.degraded.empty()) p = put_text(p, R"(,"degraded":)", r.degraded);
  if (!r.cache.empty()) {  // a fixed name: nothing to escape
    p = put(p, R"(,"cache":")");
    p = put(p, r.cache);
    *p++ = '"';
  }
  if (!r.config.empty()) {  // hex digits: nothing to escape
    p = put(p, R"(,"config":")");
    p = put(p, r.config);
    *p++ = '"';
  }
  p = put(p, "}\n");
  out.resize(start + static_cast<std::size_t>(p - begin));
}

}  // namespace arbiter
