#include "core/store/clean_text.hpp"

namespace arbiter::store {

namespace {

// The length of the valid UTF-8 sequence at `at` (1 to 4), or 0 when it is
// not one (or is a NUL).
std::size_t sequence_at(std::string_view s, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b = byte(at);
  if (b == 0) return 0;
  if (b < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;  // overlong
    if (b == 0xED) hi = 0x9F;  // surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;  // overlong
    if (b == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (at + n > s.size()) return 0;
  if (byte(at + 1) < lo || byte(at + 1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

bool is_clean_text(std::string_view text) {
  std::size_t i = 0;
  // ASCII without NUL, nearly every byte here, one compare a byte.
  while (i < text.size() && static_cast<unsigned char>(text[i] - 1) < 0x7F) ++i;
  while (i < text.size()) {
    const std::size_t n = sequence_at(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string clean_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_at(text, i);
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    if (text[i] != '\0') out += "\xEF\xBF\xBD";  // U+FFFD
    ++i;
  }
  return out;
}

}  // namespace arbiter::store
