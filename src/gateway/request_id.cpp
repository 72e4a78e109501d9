#include "gateway/request_id.hpp"

#include <algorithm>
#include <cstdint>
#include <random>

#include "core/mix.hpp"

namespace arbiter {

namespace {
bool is_sane(std::string_view id) {
  return !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == ':' || c == '-';
  });
}

std::string fresh_id() {
  // Per-thread splitmix64 over a randomly seeded counter: no lock, a few
  // instructions; ids only need to be unique enough to correlate log lines.
  thread_local uint64_t state = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  uint64_t v = mix_bits(state += kGoldenGamma);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = kHex[v & 0xf];
  return out;
}
}  // namespace

std::string choose_request_id(std::string_view from_client) {
  return is_sane(from_client) ? std::string(from_client) : fresh_id();
}

}  // namespace arbiter
