#include "core/cache/cache_key.hpp"

#include <algorithm>
#include <array>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/ascii_text.hpp"

namespace arbiter::cache {
namespace {

// A member's value text: spaces around it and the comma after it dropped.
std::string_view trim_member(std::string_view s) {
  s = trim_ascii(s);
  while (!s.empty() && (is_ascii_space(s.back()) || s.back() == ',')) s.remove_suffix(1);
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
    out[n++] = {body.substr(at, quote - at), trim_member(body.substr(colon + 1, end - colon - 1))};
  }
  return true;
}

uint64_t h64(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }

}  // namespace

KeyParts cache_key_parts(const KeyInputs& in, std::string_view body, const TopKeys& keys) {
  // What the key covers, each piece hashed once (64 bits) into one list,
  // the list then hashed to 128 bits: a few one-shot hashes, no stream.
  std::array<uint64_t, 6 + 2 * TopKeys::kMax> parts;
  std::size_t n = 0;
  parts[n++] = static_cast<uint64_t>(in.route);
  parts[n++] = h64(in.model);
  parts[n++] = h64(in.scope);
  parts[n++] = static_cast<uint64_t>(in.cap.value_or(-1));
  KeyParts out;
  std::array<Member, TopKeys::kMax> members;
  std::size_t count = 0;
  if (keys.complete && keys.count > 0 && split_members(body, keys, members, count)) {
    // Sorted by name; duplicates keep their order (the last one wins in JSON).
    std::stable_sort(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(count),
                     [](const Member& a, const Member& b) { return a.name < b.name; });
    const std::string_view prompt_key = in.route == Route::kChatCompletions ? "messages"
                                        : in.route == Route::kEmbeddings    ? "input"
                                                                            : "prompt";
    parts[n++] = 1;  // members follow
    std::size_t prompt_at = 0;  // where the prompt's pair is in `parts`; 0: none
    for (std::size_t i = 0; i < count; ++i) {
      if (ignored(members[i].name)) continue;
      if (members[i].name == prompt_key) {
        out.prompt = members[i].value;  // the last one, as JSON reads it
        prompt_at = n;
      }
      parts[n++] = h64(members[i].name);
      parts[n++] = h64(members[i].value);
    }
    // The near scope: the same list without the prompt's pair.
    std::array<uint64_t, 6 + 2 * TopKeys::kMax> rest;
    std::size_t r = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (prompt_at != 0 && (i == prompt_at || i == prompt_at + 1)) continue;
      rest[r++] = parts[i];
    }
    out.near_scope = XXH3_64bits(rest.data(), r * sizeof(uint64_t));
  } else {
    parts[n++] = 2;  // the body whole
    const XXH128_hash_t whole = XXH3_128bits(body.data(), body.size());
    parts[n++] = whole.high64;
    parts[n++] = whole.low64;
  }
  const XXH128_hash_t h = XXH3_128bits(parts.data(), n * sizeof(uint64_t));
  out.exact = {h.high64, h.low64};
  return out;
}

CacheKey cache_key(const KeyInputs& in, std::string_view body, const TopKeys& keys) {
  return cache_key_parts(in, body, keys).exact;
}

}  // namespace arbiter::cache
