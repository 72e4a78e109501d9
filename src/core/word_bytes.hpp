// Eight bytes at a time in plain word arithmetic: the constants, a
// little-endian load, and the JSON-escape test that the access log's lines
// and the audit trail's rows both ask of their text. Pure, header-only.
#pragma once

#include <cstdint>
#include <cstring>

namespace arbiter {

inline constexpr uint64_t kEveryByte = 0x0101010101010101ULL;
inline constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// The eight bytes at `p` (all readable) as one integer.
inline uint64_t load8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// The high bit set in each byte of `w` that a JSON string escapes: below
// 0x20, '"' or '\\' (bytes from 0x80 up are not); ORed over words, zero
// means clean. Exact as a yes or no: a byte's borrow can only flag a byte
// above one that is flagged anyway.
inline uint64_t escape_bits(uint64_t w) {
  const uint64_t quote = w ^ (kEveryByte * '"');
  const uint64_t backslash = w ^ (kEveryByte * '\\');
  return (((w - kEveryByte * 0x20) & ~w) | ((quote - kEveryByte) & ~quote) |
          ((backslash - kEveryByte) & ~backslash)) &
         kHighBits;
}

}  // namespace arbiter
