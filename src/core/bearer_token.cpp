#include "core/bearer_token.hpp"

#include <openssl/crypto.h>

#include <cctype>

namespace arbiter {

std::string_view bearer_credential(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return {};
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  }
  return authorization.substr(kScheme.size());
}

bool bearer_matches(std::string_view authorization, std::string_view token) {
  const std::string_view given = bearer_credential(authorization);
  // Lengths are not secret; the content is: CRYPTO_memcmp does not stop early.
  return !token.empty() && given.size() == token.size() &&
         CRYPTO_memcmp(given.data(), token.data(), token.size()) == 0;
}

}  // namespace arbiter
