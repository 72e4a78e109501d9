// Chained hashes of a prompt's leading text in fixed blocks: the key of the
// scheduler's prefix-affinity index (core/prefix_index.hpp). Block i covers
// bytes [i * kPrefixBlockBytes, (i + 1) * kPrefixBlockBytes) from where the
// prompt starts in the body; only full blocks are hashed, and hash(i) is
// seeded with hash(i - 1), so equal hashes mean equal text from the start
// (up to collisions), as an engine's prefix cache keys its blocks.
//
// The text is the request body's bytes from its `messages` (or `prompt`)
// key on: the JSON of a conversation whose client appends turns grows at
// the end, so its blocks stay equal from turn to turn. It is an estimate of
// what the engine can reuse (the engine hashes tokens after its chat
// template), good enough to choose where a prompt's prefix most likely is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace arbiter {

// 512 bytes: about 128 tokens at 4 characters a token, eight of vLLM's
// 16-token blocks.
inline constexpr std::size_t kPrefixBlockBytes = 512;
inline constexpr std::size_t kPrefixBlockTokens = 128;  // the same block counted in tokens
// Blocks hashed at most (256 KiB of prompt): deeper text adds little to the
// choice of a backend and would cost time on every request.
inline constexpr std::size_t kMaxPrefixBlocks = 512;

// Replaces `out` with the chained hashes of `text`'s full blocks. `salt`
// seeds block 0 (e.g. the model), so equal text under different salts never
// matches. XXH3: about 1 µs for 32 KiB.
void prefix_blocks(std::string_view text, uint64_t salt, std::vector<uint64_t>& out);

}  // namespace arbiter
