#include "core/cache/cache_key.hpp"

#include <algorithm>
#include <array>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace arbiter::cache {
namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && (space(s.back()) || s.back() == ',')) s.remove_suffix(1);
  return s;
}

// One top-level member: its name and its value's text.
struct Member {
  std::string_view name;
  std::string_view value;
};

// Members that change nothing in the answer: how it is delivered and who
// the client says its user is.
bool ignored(std::string_view name) { return name == "stream" || name == "stream_options" || name == "user"; }

// Splits `body` at its top-level keys; false when the text does not read as
// expected (then the body is hashed whole).
bool split_members(std::string_view body, const TopKeys& keys, std::array<Member, TopKeys::kMax>& out, std::size_t& n) {
  const std::size_t close = body.rfind('}');
  if (close == std::string_view::npos) return false;
  n = 0;
  for (std::size_t i = 0; i < keys.count; ++i) {
    const std::size_t at = keys.at[i];
    const std::size_t end = i + 1 < keys.count ? keys.at[i + 1] - 1 : close;  // the next key's quote
    if (at == 0 || at > end || end > body.size()) return false;
    const std::size_t quote = body.find('"', at);
    if (quote == std::string_view::npos || quote >= end) return false;
    const std::size_t colon = body.find(':', quote + 1);
    if (colon == std::string_view::npos || colon >= end) return false;
    out[n++] = {body.substr(at, quote - at), trim(body.substr(colon + 1, end - colon - 1))};
  }
  return true;
}

void add(XXH3_state_t* state, std::string_view s) {
  const uint64_t size = s.size();
  XXH3_128bits_update(state, &size, sizeof size);
  XXH3_128bits_update(state, s.data(), s.size());
}

}  // namespace

KeyParts cache_key_parts(const KeyInputs& in, std::string_view body, const TopKeys& keys) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  const uint8_t route = static_cast<uint8_t>(in.route);
  XXH3_128bits_update(&state, &route, 1);
  add(&state, in.model);
  add(&state, in.scope);
  const int64_t cap = in.cap.value_or(-1);
  XXH3_128bits_update(&state, &cap, sizeof cap);

  KeyParts out;
  std::array<Member, TopKeys::kMax> members;
  std::size_t n = 0;
  if (keys.complete && keys.count > 0 && split_members(body, keys, members, n)) {
    // Sorted by name; duplicates keep their order (the last one wins in JSON).
    std::stable_sort(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(n),
                     [](const Member& a, const Member& b) { return a.name < b.name; });
    const std::string_view prompt_key = in.route == Route::kChatCompletions ? "messages" : "prompt";
    XXH3_128bits_update(&state, "m", 1);
    XXH3_state_t rest;  // the same without the prompt: the near-duplicates' scope
    XXH3_copyState(&rest, &state);
    for (std::size_t i = 0; i < n; ++i) {
      if (ignored(members[i].name)) continue;
      add(&state, members[i].name);
      add(&state, members[i].value);
      if (members[i].name == prompt_key) {
        out.prompt = members[i].value;  // the last one, as JSON reads it
        continue;
      }
      add(&rest, members[i].name);
      add(&rest, members[i].value);
    }
    out.near_scope = XXH3_128bits_digest(&rest).low64;
  } else {
    XXH3_128bits_update(&state, "w", 1);
    add(&state, body);
  }
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  out.exact = {h.high64, h.low64};
  return out;
}

CacheKey cache_key(const KeyInputs& in, std::string_view body, const TopKeys& keys) {
  return cache_key_parts(in, body, keys).exact;
}

}  // namespace arbiter::cache
