// An answer as the shared result store keeps it (docs/cache.md#storage):
// its scope and model (compared when it is read back: a hash collision
// cannot cross a tenant), when it was kept, how it came (route, stream,
// the engine's usage) and its bytes, deflated (Boost.Beast's zlib). A
// value that does not read back (another version, cut, corrupt) is none.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/cache/cached_answer.hpp"

namespace arbiter {

struct StoredValue {
  std::string scope;
  std::string model;
  int64_t stored_at_ms = 0;  // Unix time, ms (replicas share no steady clock)
  cache::StoredAnswer answer;  // its raw bytes, unread
};

std::string encode_stored(const StoredValue& value);
std::optional<StoredValue> decode_stored(std::string_view bytes);

}  // namespace arbiter
