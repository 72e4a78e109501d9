// A validating JSON scan for request bodies that skips string contents a
// vector at a time (16 bytes per step where Boost.JSON's SAX parser goes
// about a byte per step through a prompt's text), delivering the same
// events, in the same order, to the same handler as Boost.JSON's
// basic_parser (core/request_fields.cpp).
//
// It reads only the common form and declines the rest: any syntax error,
// a lone escaped surrogate, a number whose value Boost.JSON might read as
// not finite or not as an int64/uint64 (more than 18 digits or an exponent
// over 250 in a fraction; an integer past uint64), nesting at max_depth or
// past kMaxFastDepth. A declined text is scanned again by Boost.JSON, which
// gives the verdict and the error: so a body is refused exactly as before,
// and a body this scan accepts must read exactly as Boost.JSON reads it
// (tests/unit/core/json_fast_scan_test.cpp and fuzz/fuzz_request_body.cpp
// compare them).
//
// Strings are checked as Boost.JSON checks them: no control bytes, valid
// escapes, UTF-8 by Boost.JSON's own tables.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <boost/json/detail/utf8.hpp>
#include <boost/json/string_view.hpp>
#include <boost/system/error_code.hpp>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace arbiter::json_fast {

// Deeper nesting is left to Boost.JSON.
inline constexpr std::size_t kMaxFastDepth = 512;

namespace detail {

inline int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  const char l = static_cast<char>(c | 0x20);
  if (l >= 'a' && l <= 'f') return l - 'a' + 10;
  return -1;
}

// The code unit of the four hex digits at `p` (end - p >= 4), or -1.
inline int hex_unit(const char* p) {
  int unit = 0;
  for (int i = 0; i < 4; ++i) {
    const int d = hex_digit(p[i]);
    if (d < 0) return -1;
    unit = unit * 16 + d;
  }
  return unit;
}

#if defined(__SSE2__)
// 0xff in each lane that stops a string skip.
inline __m128i stop_bytes(__m128i v) {
  // Signed: bytes >= 0x80 are negative, so one compare finds them and the
  // control bytes.
  const __m128i stop = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
  return _mm_or_si128(stop, _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
}
inline __m128i load16(const char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
#endif

// The first byte from `p` that a string cannot skip: '"', '\\', a control
// byte or a byte of a multi-byte character (or `end`).
inline const char* skip_plain(const char* p, const char* end) {
#if defined(__SSE2__)
  // 64 bytes a step while nothing stops (a prompt's text), then 16.
  while (end - p >= 64) {
    const __m128i a = stop_bytes(load16(p)), b = stop_bytes(load16(p + 16));
    const __m128i c = stop_bytes(load16(p + 32)), d = stop_bytes(load16(p + 48));
    if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d))) != 0) break;
    p += 64;
  }
  while (end - p >= 16) {
    if (const int mask = _mm_movemask_epi8(stop_bytes(load16(p))); mask != 0) {
      return p + std::countr_zero(static_cast<unsigned>(mask));
    }
    p += 16;
  }
#endif
  while (p < end) {
    const auto u = static_cast<unsigned char>(*p);
    if (u < 0x20 || u >= 0x80 || u == '"' || u == '\\') return p;
    ++p;
  }
  return p;
}

// Bytes of the UTF-8 encoding of a code point.
inline std::size_t utf8_size(unsigned cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

inline void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// One string, from after its opening quote.
struct ScannedString {
  const char* end = nullptr;  // after the closing quote; null: declined
  std::size_t size = 0;       // unescaped bytes
  bool escaped = false;
};

// The escape at `p` (the backslash; p < end): its code point and raw
// length, or raw 0 when declined (invalid, a lone surrogate, cut short).
struct Escape {
  unsigned cp = 0;
  std::size_t raw = 0;
};
inline Escape read_escape(const char* p, const char* end) {
  if (end - p < 2) return {};
  switch (p[1]) {
    case '"': return {'"', 2};
    case '\\': return {'\\', 2};
    case '/': return {'/', 2};
    case 'b': return {'\b', 2};
    case 'f': return {'\f', 2};
    case 'n': return {'\n', 2};
    case 'r': return {'\r', 2};
    case 't': return {'\t', 2};
    case 'u': break;
    default: return {};
  }
  if (end - p < 6) return {};
  const int unit = hex_unit(p + 2);
  if (unit < 0 || (unit >= 0xdc00 && unit <= 0xdfff)) return {};  // bad hex; a lone trailing surrogate
  if (unit < 0xd800 || unit > 0xdbff) return {static_cast<unsigned>(unit), 6};
  // A leading surrogate: its trailing one must follow at once.
  if (end - p < 12 || p[6] != '\\' || p[7] != 'u') return {};
  const int low = hex_unit(p + 8);
  if (low < 0xdc00 || low > 0xdfff) return {};
  return {0x10000 + ((static_cast<unsigned>(unit) - 0xd800) << 10) + (static_cast<unsigned>(low) - 0xdc00), 12};
}

inline ScannedString scan_string(const char* p, const char* end) {
  ScannedString s;
  const char* const begin = p;
  std::size_t removed = 0;  // raw bytes the escapes save
  for (;;) {
    p = skip_plain(p, end);
    if (p == end) return {};
    const char c = *p;
    if (c == '"') break;
    if (c == '\\') {
      const Escape e = read_escape(p, end);
      if (e.raw == 0) return {};
      removed += e.raw - utf8_size(e.cp);
      s.escaped = true;
      p += e.raw;
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20) return {};
    // A multi-byte character: Boost.JSON's own check.
    const uint16_t first = boost::json::detail::classify_utf8(c);
    const std::size_t n = first & 0xff;
    if (n == 0 || static_cast<std::size_t>(end - p) < n || !boost::json::detail::is_valid_utf8(p, first)) return {};
    p += n;
  }
  s.size = static_cast<std::size_t>(p - begin) - removed;
  s.end = p + 1;
  return s;
}

// The text of an escaped string that scan_string accepted (without its quotes).
inline void unescape(const char* p, const char* end, std::string& out) {
  out.clear();
  while (p < end) {
    if (*p != '\\') {
      out += *p++;
      continue;
    }
    const Escape e = read_escape(p, end);
    append_utf8(out, e.cp);
    p += e.raw;
  }
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A number, its kind as Boost.JSON reads it; end null: declined.
enum class NumberKind : uint8_t { kInt64, kUint64, kDouble };
struct ScannedNumber {
  const char* end = nullptr;
  NumberKind kind = NumberKind::kInt64;
  int64_t int64 = 0;
};
inline ScannedNumber scan_number(const char* p, const char* end) {
  ScannedNumber n;
  const bool negative = *p == '-';
  if (negative) ++p;
  if (p == end || !is_digit(*p)) return {};
  const char* const digits = p;
  uint64_t mant = 0;
  if (*p == '0') {
    ++p;
  } else {
    while (p < end && is_digit(*p)) {
      const unsigned d = static_cast<unsigned>(*p - '0');
      if (mant > (UINT64_MAX - d) / 10) return {};  // past uint64: Boost.JSON reads a double
      mant = mant * 10 + d;
      ++p;
    }
  }
  const std::size_t int_digits = static_cast<std::size_t>(p - digits);
  const bool fraction = p < end && *p == '.';
  const bool exponent_next = p < end && (*p | 0x20) == 'e';
  if (!fraction && !exponent_next) {
    if (p < end && is_digit(*p)) return {};  // a leading zero
    n.end = p;
    if (negative) {
      if (mant > static_cast<uint64_t>(INT64_MAX) + 1) return {};
      n.int64 = static_cast<int64_t>(~mant + 1);
    } else if (mant <= static_cast<uint64_t>(INT64_MAX)) {
      n.int64 = static_cast<int64_t>(mant);
    } else {
      n.kind = NumberKind::kUint64;
    }
    return n;
  }
  // A double: finite as Boost.JSON computes it when its mantissa stays
  // under 10^18 and its exponent within 250 (|value| < 1e270, no inf, no NaN).
  std::size_t frac_digits = 0;
  if (fraction) {
    ++p;
    const char* f = p;
    while (p < end && is_digit(*p)) ++p;
    frac_digits = static_cast<std::size_t>(p - f);
    if (frac_digits == 0) return {};
  }
  if (int_digits + frac_digits > 18) return {};
  if (p < end && (*p | 0x20) == 'e') {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    const char* e = p;
    unsigned value = 0;
    while (p < end && is_digit(*p) && p - e < 4) value = value * 10 + static_cast<unsigned>(*p++ - '0');
    if (p == e || (p < end && is_digit(*p)) || value > 250) return {};
  }
  n.end = p;
  n.kind = NumberKind::kDouble;
  return n;
}

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
inline const char* skip_space(const char* p, const char* end) {
  while (p < end && is_space(*p)) ++p;
  return p;
}

}  // namespace detail

// Scans `text` into `h` (Boost.JSON's handler interface; `h.wants_text()`
// says whether the next string value's text is read). False: declined,
// with some events perhaps delivered: the caller starts again elsewhere.
template <class Handler>
bool scan(std::string_view text, Handler& h, std::size_t max_depth) {
  using namespace detail;
  boost::system::error_code ec;
  const std::size_t depth_limit = max_depth < kMaxFastDepth ? max_depth : kMaxFastDepth;
  // Per open container: whether it is an object, and its members so far.
  bool is_object[kMaxFastDepth];
  std::size_t members[kMaxFastDepth];
  std::size_t depth = 0;
  std::string unescaped;  // an escaped key, or a string value the handler reads

  const char* p = text.data();
  const char* const end = p + text.size();
  h.on_document_begin(ec);
  p = skip_space(p, end);
  if (p == end) return false;

value:
  switch (*p) {
    case '{':
    case '[': {
      const bool object = *p == '{';
      if (depth + 1 >= depth_limit) return false;
      object ? h.on_object_begin(ec) : h.on_array_begin(ec);
      is_object[depth] = object;
      members[depth] = 0;
      ++depth;
      p = skip_space(p + 1, end);
      if (p == end) return false;
      if (*p == (object ? '}' : ']')) goto close;
      if (object) goto key;
      ++members[depth - 1];
      goto value;
    }
    case '"': {
      const ScannedString s = scan_string(p + 1, end);
      if (!s.end) return false;
      boost::json::string_view sv(p + 1, static_cast<std::size_t>(s.end - 1 - (p + 1)));
      if (s.escaped && h.wants_text()) {
        unescape(sv.data(), sv.data() + sv.size(), unescaped);
        sv = boost::json::string_view(unescaped.data(), unescaped.size());
      }
      h.on_string(sv, s.size, ec);
      p = s.end;
      break;
    }
    case 't':
    case 'f':
    case 'n': {
      const std::string_view word = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
      if (static_cast<std::size_t>(end - p) < word.size() || std::memcmp(p, word.data(), word.size()) != 0) return false;
      if (*p == 'n') {
        h.on_null(ec);
      } else {
        h.on_bool(*p == 't', ec);
      }
      p += word.size();
      break;
    }
    default: {
      if (*p != '-' && !is_digit(*p)) return false;
      const ScannedNumber n = scan_number(p, end);
      if (!n.end) return false;
      const boost::json::string_view sv(p, static_cast<std::size_t>(n.end - p));
      switch (n.kind) {
        case NumberKind::kInt64: h.on_int64(n.int64, sv, ec); break;
        case NumberKind::kUint64: h.on_uint64(0, sv, ec); break;
        case NumberKind::kDouble: h.on_double(0.0, sv, ec); break;  // finite by scan_number's bounds
      }
      p = n.end;
      break;
    }
  }

next:  // after a value
  p = skip_space(p, end);
  if (depth == 0) {
    if (p != end) return false;  // extra data
    h.on_document_end(ec);
    return true;
  }
  if (p == end) return false;
  if (*p == ',') {
    p = skip_space(p + 1, end);
    if (p == end) return false;
    if (is_object[depth - 1]) goto key;
    ++members[depth - 1];
    goto value;
  }
  if (*p != (is_object[depth - 1] ? '}' : ']')) return false;

close:  // p at the closing bracket
  --depth;
  is_object[depth] ? h.on_object_end(members[depth], ec) : h.on_array_end(members[depth], ec);
  ++p;
  goto next;

key:  // p at what must be a key's opening quote
  {
    if (*p != '"') return false;
    const ScannedString s = scan_string(p + 1, end);
    if (!s.end) return false;
    boost::json::string_view sv(p + 1, static_cast<std::size_t>(s.end - 1 - (p + 1)));
    if (s.escaped) {
      unescape(sv.data(), sv.data() + sv.size(), unescaped);
      sv = boost::json::string_view(unescaped.data(), unescaped.size());
    }
    h.on_key(sv, s.size, ec);
    p = skip_space(s.end, end);
    if (p == end || *p != ':') return false;
    p = skip_space(p + 1, end);
    if (p == end) return false;
    ++members[depth - 1];
    goto value;
  }
}

}  // namespace arbiter::json_fast
