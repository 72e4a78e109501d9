// Builds the YAML config the integration tests start the gateway with: one
// model "m1" served by the given fake upstreams, two tenants, generous
// timeouts unless a test tightens them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace arbiter::test {

// API keys of the test tenants. alpha may use every class (by claim, those
// that outrank the default only when GatewayConfig::alpha_classes lists
// them); beta only chat.
inline constexpr const char* kAlphaKey = "sk-alpha-7f3c9e1d2b";
inline constexpr const char* kBetaKey = "sk-beta-4a8d6f0e5c";
inline constexpr const char* kModel = "m1";

struct GatewayConfig {
  std::vector<uint16_t> backend_ports;  // backends of model m1
  std::string backend_host = "127.0.0.1";  // their host in the URL ("[::1]" for IPv6 loopback)
  unsigned threads = 2;
  unsigned max_concurrency = 8;
  int upstream_first_byte_ms = 5'000;
  int stream_idle_ms = 5'000;
  int drain_ms = 5'000;
  std::size_t max_body_bytes = 1u << 20;
  unsigned max_connections = 0;        // listener.max_connections; 0: not written
  std::optional<unsigned> max_json_depth;  // limits.max_json_depth, when given
  bool auth = true;
  // Scrape the backends' /metrics (off by default: a fake upstream records
  // every request, and scrapes would mix in).
  bool engine_signals = false;
  // alpha's allowed_classes, e.g. "[critical, chat]"; empty: no list (every
  // class by rule; by claim, those that do not outrank the default class).
  std::string alpha_classes;
  std::string alpha_extra;    // added to alpha's map, e.g. ", quotas: [{requests_per_minute: 10}]"
  std::string extra;          // appended verbatim (top-level keys)
  std::string timeouts_extra; // added to the timeouts map, e.g. ", client_header_ms: 60000"
  std::string backend_extra;  // added to every backend's map, e.g. ", continue_final_message: true"
  std::vector<std::string> backend_extras;  // then to backend i's map, when given
  // YAML lines right after m1's backends: m1's own keys (4 spaces, e.g.
  // "    degraded: m1-awq\n") or more models ("  - name: small\n    backends: ...").
  std::string models_extra;
  // Not YAML: the gateway process's RLIMIT_NOFILE, soft and hard (Harness).
  std::optional<unsigned> fd_limit;

  std::string to_yaml() const;
};

// "Authorization: Bearer <key>" as a header pair.
std::pair<std::string, std::string> bearer(const std::string& key);

}  // namespace arbiter::test
