#include "support/gateway_config.hpp"

#include <sstream>

namespace arbiter::test {

std::string GatewayConfig::to_yaml() const {
  std::ostringstream y;
  y << "listener: {address: 127.0.0.1, port: 0, threads: " << threads
    << (max_connections ? ", max_connections: " + std::to_string(max_connections) : "") << "}\n"
    << "timeouts: {upstream_first_byte_ms: " << upstream_first_byte_ms
    << ", stream_idle_ms: " << stream_idle_ms << ", drain_ms: " << drain_ms << timeouts_extra << "}\n"
    << "limits: {max_body_bytes: " << max_body_bytes
    << (max_json_depth ? ", max_json_depth: " + std::to_string(*max_json_depth) : "") << "}\n"
    << "auth: {enabled: " << (auth ? "true" : "false") << "}\n"
    << "engine_signals: {enabled: " << (engine_signals ? "true" : "false") << "}\n"
    << "tenants:\n"
    << "  - {name: alpha, api_keys: [" << kAlphaKey << "]"
    << (alpha_classes.empty() ? "" : ", allowed_classes: " + alpha_classes) << alpha_extra << "}\n"
    << "  - {name: beta, api_keys: [" << kBetaKey << "], allowed_classes: [chat]}\n"
    << "models:\n"
    << "  - name: " << kModel << "\n"
    << "    backends:\n";
  for (std::size_t i = 0; i < backend_ports.size(); ++i) {
    y << "      - {url: \"http://" << backend_host << ":" << backend_ports[i] << "\", max_concurrency: " << max_concurrency
      << backend_extra << (i < backend_extras.size() ? backend_extras[i] : "") << "}\n";
  }
  y << models_extra << extra;
  return y.str();
}

std::pair<std::string, std::string> bearer(const std::string& key) {
  return {"authorization", "Bearer " + key};
}

}  // namespace arbiter::test
