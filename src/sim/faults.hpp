// Fault injection settings of one simulated engine, their JSON form for the
// admin endpoint (POST/GET /admin/faults), and the deterministic draw that
// decides which requests a rate hits.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace arbiter::sim {

struct Faults {
  double error_rate = 0;                 // share of inference requests answered with error_status
  int error_status = 503;                // 429, 500 or 503
  std::uint32_t added_latency_ms = 0;    // wait before handling an inference request
  double hang_rate = 0;                  // share of inference requests read and never answered
  std::uint32_t crash_after_tokens = 0;  // 0: off; else drop the socket after this many tokens
  double crash_rate = 1;                 // share of requests the crash hits when crash_after_tokens > 0
  double slow_start_s = 0;               // /health and requests answer 503 this long after (re)start
  std::uint32_t kv_blocks = 0;           // 0: every configured KV block usable; else only this many
};

// Empty when valid; otherwise what is wrong (for flags and the admin API).
std::string faults_error(const Faults& faults);

// Applies the fields present in a JSON object (the others keep their
// values) and validates the result; `faults` is unchanged on error.
std::expected<void, std::string> apply_faults_json(Faults& faults, std::string_view json);

// Every field as one JSON object.
std::string faults_json(const Faults& faults);

// What a rate decides, per kind of fault, so that each has its own stream.
enum class FaultKind : std::uint8_t { kError, kHang, kCrash };

// Deterministic: the n-th request of an engine under a given seed is hit
// or not, the same on every run; over many requests about `rate` are hit.
bool fault_hits(double rate, std::uint64_t seed, std::uint32_t engine, FaultKind kind,
                std::uint64_t n);

}  // namespace arbiter::sim
