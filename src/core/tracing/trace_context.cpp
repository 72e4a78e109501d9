#include "core/tracing/trace_context.hpp"

#include <algorithm>

namespace arbiter::tracing {

namespace {

constexpr char kHex[] = "0123456789abcdef";

int nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is invalid in traceparent
}

template <std::size_t N>
bool read_hex(std::string_view text, std::array<uint8_t, N>& out) {
  if (text.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = nibble(text[2 * i]);
    const int lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return std::any_of(out.begin(), out.end(), [](uint8_t b) { return b != 0; });
}

template <std::size_t N>
std::string write_hex(const std::array<uint8_t, N>& id) {
  std::string out(2 * N, '0');
  for (std::size_t i = 0; i < N; ++i) {
    out[2 * i] = kHex[id[i] >> 4];
    out[2 * i + 1] = kHex[id[i] & 0xf];
  }
  return out;
}

void put(uint64_t word, uint8_t* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(word >> (56 - 8 * i));
}

}  // namespace

std::optional<TraceParent> parse_traceparent(std::string_view value) {
  // version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2 = 55
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.size() < 55 || value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  const int v_hi = nibble(value[0]);
  const int v_lo = nibble(value[1]);
  if (v_hi < 0 || v_lo < 0 || (v_hi == 0xf && v_lo == 0xf)) return std::nullopt;
  // Version 00 is exactly 55 characters; a later version may add fields after a '-'.
  if (value.size() > 55 && (v_hi == 0 && v_lo == 0 ? true : value[55] != '-')) return std::nullopt;
  TraceParent out;
  if (!read_hex(value.substr(3, 32), out.trace_id) || !read_hex(value.substr(36, 16), out.span_id)) return std::nullopt;
  const int f_hi = nibble(value[53]);
  const int f_lo = nibble(value[54]);
  if (f_hi < 0 || f_lo < 0) return std::nullopt;
  out.sampled = (f_lo & 1) != 0;
  return out;
}

std::string format_traceparent(const TraceId& trace, const SpanId& span, bool sampled) {
  return "00-" + write_hex(trace) + "-" + write_hex(span) + (sampled ? "-01" : "-00");
}

std::string hex(const TraceId& id) { return write_hex(id); }
std::string hex(const SpanId& id) { return write_hex(id); }

TraceId trace_id_from(uint64_t hi, uint64_t lo) {
  TraceId id{};
  put(hi, id.data());
  put(lo == 0 && hi == 0 ? 1 : lo, id.data() + 8);
  return id;
}

SpanId span_id_from(uint64_t word) {
  SpanId id{};
  put(word == 0 ? 1 : word, id.data());
  return id;
}

bool sampled(const std::optional<TraceParent>& parent, double ratio, uint64_t draw) {
  if (parent) return parent->sampled;
  if (ratio <= 0) return false;
  if (ratio >= 1) return true;
  // draw < ratio * 2^64, without overflow
  return static_cast<double>(draw >> 11) < ratio * static_cast<double>(uint64_t{1} << 53);
}

}  // namespace arbiter::tracing
