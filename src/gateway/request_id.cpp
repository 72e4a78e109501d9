#include "gateway/request_id.hpp"

#include <algorithm>
#include <cstdint>
#include <random>

namespace arbiter {

namespace {
bool is_sane(std::string_view id) {
  return !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == ':' || c == '-';
  });
}

std::string fresh_id() {
  // Per-thread generator: no lock; ids only need to be unique enough to
  // correlate log lines.
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t v = rng();
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = kHex[v & 0xf];
  return out;
}
}  // namespace

std::string choose_request_id(std::string_view from_client) {
  return is_sane(from_client) ? std::string(from_client) : fresh_id();
}

}  // namespace arbiter
