// The result cache's key (docs/cache.md): which requests get the same
// answer. It covers the route, the model served, the scope (the tenant, its
// team, or all), the output cap the class writes into the body, and the
// body's top-level members sorted by name, with the ones that do not change
// the answer left out (`stream`, `stream_options`, `user`) and the spaces
// around them ignored. Never the API key. 128 bits of XXH3: the store also
// keeps each entry's scope and model and compares them, so no collision can
// cross a tenant.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "core/request.hpp"
#include "core/request_fields.hpp"

namespace arbiter::cache {

struct CacheKey {
  uint64_t hi = 0;
  uint64_t lo = 0;
  auto operator<=>(const CacheKey&) const = default;
};

struct CacheKeyHash {
  std::size_t operator()(const CacheKey& k) const { return static_cast<std::size_t>(k.lo ^ (k.hi * 0x9e3779b97f4a7c15ULL)); }
};

// What besides the body decides the answer.
struct KeyInputs {
  Route route = Route::kChatCompletions;
  std::string_view model;
  std::string_view scope;          // "tenant:<name>", "team:<name>" or "global"
  std::optional<int64_t> cap;      // the class's max_tokens cap, when it has one
};

// `keys`: where the body's top-level keys start (parse_request); when they
// are not all known, the body's bytes are hashed whole (fewer hits, never a
// wrong one).
CacheKey cache_key(const KeyInputs& in, std::string_view body, const TopKeys& keys);

// The key, and for near-duplicates what it is made of: the hash of
// everything but the prompt (requests whose prompts may be near
// duplicates share it) and the prompt's JSON text (`messages` for chat,
// `prompt` for completions, `input` for embeddings; empty when the body's
// keys are not all known).
struct KeyParts {
  CacheKey exact;
  uint64_t near_scope = 0;
  std::string_view prompt;
};
KeyParts cache_key_parts(const KeyInputs& in, std::string_view body, const TopKeys& keys);

}  // namespace arbiter::cache
