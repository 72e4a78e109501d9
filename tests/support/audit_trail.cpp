#include "support/audit_trail.hpp"

#include "support/http_client.hpp"
#include "support/redis_server.hpp"  // poll_until

namespace arbiter::test {

std::string audit_trail_with(GatewayProcess& gateway, const std::string& needle, bool& found, int limit) {
  std::string trail;
  found = poll_until(
      [&] {
        trail = http_get(gateway.admin_port(), "/admin/audit?limit=" + std::to_string(limit)).body;
        return trail.find(needle) != std::string::npos;
      },
      Millis(10'000));
  return trail;
}

}  // namespace arbiter::test
