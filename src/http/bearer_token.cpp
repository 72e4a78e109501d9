#include "http/bearer_token.hpp"

#include <openssl/crypto.h>

#include <cctype>

namespace arbiter {

bool bearer_matches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kScheme = "bearer ";
  if (token.empty() || authorization.size() != kScheme.size() + token.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  }
  // Lengths are not secret; the content is: CRYPTO_memcmp does not stop early.
  return CRYPTO_memcmp(authorization.data() + kScheme.size(), token.data(), token.size()) == 0;
}

}  // namespace arbiter
