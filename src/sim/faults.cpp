#include "sim/faults.hpp"

#include "sim/mix.hpp"

#include <cmath>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace arbiter::sim {

namespace json = boost::json;

namespace {

std::expected<double, std::string> read_number(const json::value& v, std::string_view key) {
  if (v.is_double()) return v.get_double();
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return std::unexpected(fmt::format("'{}' must be a number", key));
}

std::expected<std::uint32_t, std::string> read_count(const json::value& v, std::string_view key) {
  if (v.is_int64() && v.get_int64() >= 0 && v.get_int64() <= UINT32_MAX) {
    return static_cast<std::uint32_t>(v.get_int64());
  }
  return std::unexpected(fmt::format("'{}' must be a non-negative integer", key));
}

}  // namespace

std::string faults_error(const Faults& f) {
  const auto rate_ok = [](double r) { return std::isfinite(r) && r >= 0 && r <= 1; };
  if (!rate_ok(f.error_rate)) return "error_rate must be within [0, 1]";
  if (f.error_status != 429 && f.error_status != 500 && f.error_status != 503) {
    return "error_status must be 429, 500 or 503";
  }
  if (!rate_ok(f.hang_rate)) return "hang_rate must be within [0, 1]";
  if (!rate_ok(f.crash_rate)) return "crash_rate must be within [0, 1]";
  if (!std::isfinite(f.slow_start_s) || f.slow_start_s < 0) return "slow_start_s must be >= 0";
  return {};
}

std::expected<void, std::string> apply_faults_json(Faults& faults, std::string_view text) {
  boost::system::error_code ec;
  const json::value doc = json::parse(text, ec);
  if (ec || !doc.is_object()) return std::unexpected("body must be a JSON object");
  Faults next = faults;
  for (const auto& [key, value] : doc.get_object()) {
    std::expected<void, std::string> ok;
    const auto set_number = [&](double& field) {
      auto v = read_number(value, key);
      if (v) field = *v; else ok = std::unexpected(v.error());
    };
    const auto set_count = [&](std::uint32_t& field) {
      auto v = read_count(value, key);
      if (v) field = *v; else ok = std::unexpected(v.error());
    };
    if (key == "error_rate") set_number(next.error_rate);
    else if (key == "hang_rate") set_number(next.hang_rate);
    else if (key == "crash_rate") set_number(next.crash_rate);
    else if (key == "slow_start_s") set_number(next.slow_start_s);
    else if (key == "added_latency_ms") set_count(next.added_latency_ms);
    else if (key == "crash_after_tokens") set_count(next.crash_after_tokens);
    else if (key == "kv_blocks") set_count(next.kv_blocks);
    else if (key == "error_status") {
      auto v = read_count(value, key);
      if (v) next.error_status = static_cast<int>(*v); else ok = std::unexpected(v.error());
    } else {
      ok = std::unexpected(fmt::format("unknown fault '{}'", std::string_view(key)));
    }
    if (!ok) return ok;
  }
  if (std::string err = faults_error(next); !err.empty()) return std::unexpected(std::move(err));
  faults = next;
  return {};
}

std::string faults_json(const Faults& f) {
  json::object o;
  o["error_rate"] = f.error_rate;
  o["error_status"] = f.error_status;
  o["added_latency_ms"] = f.added_latency_ms;
  o["hang_rate"] = f.hang_rate;
  o["crash_after_tokens"] = f.crash_after_tokens;
  o["crash_rate"] = f.crash_rate;
  o["slow_start_s"] = f.slow_start_s;
  o["kv_blocks"] = f.kv_blocks;
  return json::serialize(o);
}

bool fault_hits(double rate, std::uint64_t seed, std::uint32_t engine, FaultKind kind,
                std::uint64_t n) {
  if (rate <= 0) return false;
  if (rate >= 1) return true;
  const std::uint64_t stream = mix(seed ^ mix((std::uint64_t{engine} << 8) | static_cast<std::uint8_t>(kind)));
  // Top 53 bits as a uniform double in [0, 1).
  const double u = static_cast<double>(mix(stream + n) >> 11) * 0x1.0p-53;
  return u < rate;
}

}  // namespace arbiter::sim
