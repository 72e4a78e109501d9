#include "http/head_scan.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <memory>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace arbiter {

namespace {

// RFC 9110 tchar: the bytes a field name or a method may hold.
constexpr std::array<bool, 256> kTokenChars = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (const char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

bool is_token_char(char c) { return kTokenChars[static_cast<unsigned char>(c)]; }

constexpr std::size_t kNoName = static_cast<std::size_t>(-1);

#if defined(__SSE2__)
// 0xff in each lane where lo <= v <= hi (unsigned).
__m128i in_range(__m128i v, char lo, char hi) {
  return _mm_cmpeq_epi8(_mm_min_epu8(_mm_max_epu8(v, _mm_set1_epi8(lo)), _mm_set1_epi8(hi)), v);
}

// 0xff in each lane holding a letter, a digit or '-': what nearly every
// field name is made of (all tchars).
__m128i common_name_bytes(__m128i v) {
  const __m128i letter = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 'z');
  const __m128i digit = in_range(v, '0', '9');
  return _mm_or_si128(_mm_or_si128(letter, digit), _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
}
#endif

// Every byte of `s` is a tchar.
bool all_token_chars(std::string_view s) {
  return std::all_of(s.begin(), s.end(), is_token_char);
}

// Length of the field name at `p`: the tchars before a ':'. kNoName when
// there is none or a byte before the colon is not a tchar.
std::size_t name_length(const char* p, const char* end) {
#if defined(__SSE2__)
  if (end - p >= 16) {  // most names: one vector finds the colon and checks them
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int colon = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(':')));
    if (colon != 0) {
      const int n = __builtin_ctz(colon);
      const int before_colon = (1 << n) - 1;
      if ((_mm_movemask_epi8(common_name_bytes(v)) & before_colon) == before_colon) return static_cast<std::size_t>(n);
      // A rarer tchar, or a byte that is none: the table decides.
      return all_token_chars({p, static_cast<std::size_t>(n)}) ? static_cast<std::size_t>(n) : kNoName;
    }
  }
#endif
  const char* s = p;
  while (s < end && is_token_char(*s)) ++s;
  return s < end && *s == ':' ? static_cast<std::size_t>(s - p) : kNoName;
}

// A byte a field value or a reason phrase may hold: anything but a control
// character other than HTAB (so CR, LF and NUL end the run) and DEL.
bool is_value_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 0x20 && u != 0x7f) || u == '\t';
}

// Bytes from `p` before the first one that is not a value byte (or `end`).
std::size_t value_run(const char* p, const char* end) {
  const char* s = p;
#if defined(__SSE2__)
  const __m128i ctl_max = _mm_set1_epi8(0x1f);
  const __m128i tab = _mm_set1_epi8('\t');
  const __m128i del = _mm_set1_epi8(0x7f);
  while (end - s >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    __m128i bad = _mm_cmpeq_epi8(_mm_min_epu8(v, ctl_max), v);  // v <= 0x1f
    bad = _mm_andnot_si128(_mm_cmpeq_epi8(v, tab), bad);
    bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, del));
    if (const int mask = _mm_movemask_epi8(bad); mask != 0) {
      return static_cast<std::size_t>(s - p) + static_cast<std::size_t>(__builtin_ctz(mask));
    }
    s += 16;
  }
#endif
  while (s < end && is_value_byte(*s)) ++s;
  return static_cast<std::size_t>(s - p);
}

bool is_crlf(const char* p, const char* end) { return end - p >= 2 && p[0] == '\r' && p[1] == '\n'; }

// Content-Length: 1 to 19 digits (no sign, no list), so it fits in 64 bits.
bool parse_length(std::string_view v, uint64_t& out) {
  if (v.empty() || v.size() > 19) return false;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc{} && end == v.data() + v.size();
}

// What the framing fields say. Beast's parser interprets and validates
// these itself; the scan takes only their plain forms.
struct Framing {
  bool has_length = false;
  uint64_t length = 0;
  bool close = false;  // Connection: close
};

// False (declined) for anything but one Content-Length, at most one
// Connection that is exactly `close` or `keep-alive` (Beast validates token
// lists), and none of Transfer-Encoding, Proxy-Connection (Beast reads it
// like Connection), Upgrade or Expect.
bool read_framing(std::span<const HeadField> fields, Framing& out) {
  bool has_connection = false;
  for (const HeadField& f : fields) {
    // By length first: most fields (Host, User-Agent, Content-Type, Server,
    // Date) match none of these, and each length has one candidate.
    switch (f.name.size()) {
      case 14:  // content-length
        if (!lower_equals(f.name, "content-length")) continue;
        if (out.has_length || !parse_length(f.value, out.length)) return false;
        out.has_length = true;
        break;
      case 10:  // connection
        if (!lower_equals(f.name, "connection")) continue;
        if (has_connection) return false;
        has_connection = true;
        if (lower_equals(f.value, "close")) {
          out.close = true;
        } else if (!lower_equals(f.value, "keep-alive")) {
          return false;
        }
        break;
      case 17:
        if (lower_equals(f.name, "transfer-encoding")) return false;
        break;
      case 16:
        if (lower_equals(f.name, "proxy-connection")) return false;
        break;
      case 7:
        if (lower_equals(f.name, "upgrade")) return false;
        break;
      case 6:
        if (lower_equals(f.name, "expect")) return false;
        break;
      default:
        break;
    }
  }
  return true;
}

}  // namespace

bool scan_head(std::string_view bytes, std::size_t limit, ScannedHead& out) {
  const char* const begin = bytes.data();
  const char* const end = begin + std::min(bytes.size(), limit);
  const char* p = begin;
  const std::size_t line = value_run(p, end);
  if (!is_crlf(p + line, end)) return false;
  out.start_line = {p, line};
  p += line + 2;
  out.field_count = 0;
  for (;;) {
    if (is_crlf(p, end)) {
      out.size = static_cast<std::size_t>(p + 2 - begin);
      return true;
    }
    // name ":" OWS value OWS CRLF. A line starting with whitespace
    // (obs-fold) or any stray byte ends the scan here.
    const std::size_t name_size = name_length(p, end);
    if (name_size == 0 || name_size == kNoName) return false;
    const std::string_view field_name(p, name_size);
    p += name_size + 1;
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    const char* value = p;
    p += value_run(p, end);
    if (!is_crlf(p, end)) return false;
    const char* value_end = p;
    while (value_end > value && (value_end[-1] == ' ' || value_end[-1] == '\t')) --value_end;
    if (out.field_count == kMaxScannedFields) return false;
    std::construct_at(&out.field_storage[out.field_count++],
                      HeadField{field_name, {value, static_cast<std::size_t>(value_end - value)}});
    p += 2;
  }
}

bool scan_request(std::string_view bytes, std::size_t header_limit, const BodyLimits& body_limits,
                  ScannedRequest& out) {
  out.awaiting = 0;
  if (!scan_head(bytes, header_limit, out.head)) return false;
  // method SP request-target SP HTTP/1.1
  const std::string_view line = out.head.start_line;
  constexpr std::string_view kVersion = " HTTP/1.1";
  if (!line.ends_with(kVersion)) return false;
  const std::size_t sp = line.find(' ');
  // The method's space must come before the version's: "POST HTTP/1.1" has
  // one space only, and no target (found by fuzzing: fuzz/, docs/security.md).
  if (sp == 0 || sp == std::string_view::npos || sp >= line.size() - kVersion.size()) return false;
  const std::string_view method = line.substr(0, sp);
  if (!all_token_chars(method)) return false;
  out.method = http::string_to_verb(method);
  if (out.method == http::verb::unknown) return false;
  out.target = line.substr(sp + 1, line.size() - kVersion.size() - sp - 1);
  if (out.target.empty() || !std::all_of(out.target.begin(), out.target.end(), [](char c) {
        return c > 0x20 && c < 0x7f;
      })) {
    return false;
  }

  Framing framing;
  if (!read_framing(out.head.fields(), framing)) return false;
  out.keep_alive = !framing.close;
  const uint64_t length = framing.length;  // none: no body
  if (length > body_limits.for_target(out.target)) return false;
  if (length > bytes.size() - out.head.size) {
    out.awaiting = out.head.size + static_cast<std::size_t>(length);
    return false;
  }
  out.body = bytes.substr(out.head.size, static_cast<std::size_t>(length));
  out.size = out.head.size + static_cast<std::size_t>(length);
  return true;
}

bool scan_response(std::string_view bytes, std::size_t header_limit, ScannedResponse& out) {
  if (!scan_head(bytes, header_limit, out.head)) return false;
  // HTTP/1.1 SP status-code SP [reason-phrase]
  const std::string_view line = out.head.start_line;
  constexpr std::string_view kVersion = "HTTP/1.1 ";
  if (line.size() < kVersion.size() + 4 || !line.starts_with(kVersion) || line[kVersion.size() + 3] != ' ') {
    return false;
  }
  const std::string_view code = line.substr(kVersion.size(), 3);
  if (!std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  out.status = static_cast<unsigned>((code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0'));
  // Responses whose framing is not Content-Length by rule.
  if (out.status < 200 || out.status == 204 || out.status == 304) return false;

  Framing framing;
  if (!read_framing(out.head.fields(), framing) || !framing.has_length) return false;
  out.content_length = framing.length;
  out.keep_alive = !framing.close;
  return true;
}

}  // namespace arbiter
