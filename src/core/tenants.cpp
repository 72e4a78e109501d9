#include "core/tenants.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>

#include "core/bearer_token.hpp"

namespace arbiter {

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

TenantDirectory::TenantDirectory(const std::vector<TenantConfig>& tenants, bool auth_enabled)
    : auth_enabled_(auth_enabled) {
  for (const auto& t : tenants) {
    for (const auto& h : t.key_sha256) by_key_hash_.emplace(h, &t);
    for (const auto& name : t.client_cert_names) by_cert_name_.emplace(name, &t);
    by_name_.emplace(t.name, &t);
  }
}

std::expected<const TenantConfig*, ApiError> TenantDirectory::acting_as(std::string_view name) const {
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  if (name == kAnonymousTenant && !auth_enabled_) return nullptr;
  return std::unexpected(ApiError{ErrorCode::kUnauthorized,
                                  "the tenant '" + std::string(name) + "' is not configured any more", {}, {}});
}

std::expected<const TenantConfig*, ApiError> TenantDirectory::authenticate(
    std::string_view authorization, std::span<const std::string> cert_names) const {
  const std::string_view key = bearer_credential(authorization);
  if (!key.empty()) {
    if (auto it = by_key_hash_.find(sha256_hex(key)); it != by_key_hash_.end()) return it->second;
  }
  for (const std::string& name : cert_names) {
    if (auto it = by_cert_name_.find(name); it != by_cert_name_.end()) return it->second;
  }
  if (!auth_enabled_) return nullptr;
  return std::unexpected(ApiError{
      ErrorCode::kUnauthorized,
      key.empty() ? "missing API key: send 'Authorization: Bearer <key>'" : "invalid API key",
      {},
      {}});
}

}  // namespace arbiter
