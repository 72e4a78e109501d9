#include "core/config_exposure.hpp"

namespace arbiter {

bool is_loopback(std::string_view address) {
  return address == "127.0.0.1" || address == "::1" || address == "localhost" || address.starts_with("127.");
}

std::vector<std::string> exposure_warnings(const Config& config) {
  std::vector<std::string> out;
  if (!config.auth.enabled && !is_loopback(config.listener.address)) {
    out.push_back("auth.enabled is false on " + config.listener.address +
                  ": anyone who reaches this port sends inference to your engines, unmetered and outside "
                  "any tenant's quota; set auth.enabled and tenants' api_keys (docs/security.md)");
  }
  return out;
}

}  // namespace arbiter
