#include "gateway/admin/percent_decode.hpp"

#include <charconv>

namespace arbiter {

std::optional<std::string> percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    unsigned byte = 0;
    if (i + 2 >= s.size()) return std::nullopt;
    const auto [end, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, byte, 16);
    if (ec != std::errc{} || end != s.data() + i + 3) return std::nullopt;
    out += static_cast<char>(byte);
    i += 2;
  }
  return out;
}

}  // namespace arbiter
