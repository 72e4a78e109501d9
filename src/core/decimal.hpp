// Integers written in decimal straight into a buffer the caller sized (20
// bytes, 21 with a sign, are always enough): the digits two at a time from a
// table, from the end once their count is known. std::to_chars's method,
// inlined, and the digit count without a loop (the access log's lines and
// the audit trail's rows write several a request; a 13-digit millisecond
// timestamp cost ~240 instructions through the library). Pure.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

namespace arbiter {

// `v`'s digits at `p`; where they end.
inline char* put_uint(char* p, uint64_t v) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  static constexpr auto kPowersOf10 = [] {
    std::array<uint64_t, 20> powers{};
    powers[0] = 1;
    for (std::size_t i = 1; i < powers.size(); ++i) powers[i] = powers[i - 1] * 10;
    return powers;
  }();
  // The digit count from the bit width (log10 2 ~ 1233 / 4096: at most one
  // too many), then one compare: no loop over the powers.
  const auto t = static_cast<std::size_t>(std::bit_width(v | 1) * 1233 >> 12);
  const std::size_t len = t + 1 - static_cast<std::size_t>((v | 1) < kPowersOf10[t]);
  char* const end = p + len;
  char* q = end;
  while (v >= 100) {
    q -= 2;
    std::memcpy(q, kPairs + v % 100 * 2, 2);
    v /= 100;
  }
  if (v >= 10) {
    std::memcpy(q - 2, kPairs + v * 2, 2);
  } else {
    q[-1] = static_cast<char>('0' + v);
  }
  return end;
}

// `v`'s digits at `p`, a '-' first when negative; where they end.
inline char* put_int(char* p, int64_t v) {
  if (v >= 0) return put_uint(p, static_cast<uint64_t>(v));
  *p++ = '-';
  return put_uint(p, -static_cast<uint64_t>(v));
}

}  // namespace arbiter
