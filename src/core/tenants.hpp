// Authentication: maps the SHA-256 of a bearer key to its tenant (only
// hashes are kept in memory, so a heap dump or a log line never holds a
// usable key), or a verified client certificate's name to its tenant
// (tenants[].client_cert_names, with listener.tls client certificates).
// An API key that names a tenant comes first; then the certificate.
#pragma once

#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"

namespace arbiter {

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

class TenantDirectory {
 public:
  TenantDirectory(const std::vector<TenantConfig>& tenants, bool auth_enabled);

  // The tenant an Authorization header value belongs to, else the tenant
  // one of `cert_names` (the connection's verified client certificate's
  // names) maps to; nullptr means the anonymous tenant (auth disabled and
  // neither recognised).
  std::expected<const TenantConfig*, ApiError> authenticate(std::string_view authorization,
                                                            std::span<const std::string> cert_names = {}) const;

  // The tenant a gateway-internal client acts for (a batch's, by name):
  // nullptr for the anonymous tenant while auth is off; 401 when no
  // configured tenant has that name any more.
  std::expected<const TenantConfig*, ApiError> acting_as(std::string_view name) const;

  bool auth_enabled() const { return auth_enabled_; }

 private:
  std::unordered_map<std::string, const TenantConfig*> by_key_hash_;  // hex sha256 -> tenant
  std::unordered_map<std::string, const TenantConfig*> by_cert_name_;
  std::unordered_map<std::string_view, const TenantConfig*> by_name_;  // views the config's names
  bool auth_enabled_;
};

// The tenant name used in logs and metrics for unauthenticated traffic.
inline constexpr std::string_view kAnonymousTenant = "anonymous";

}  // namespace arbiter
