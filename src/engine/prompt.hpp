// The simulator's tokenizer: a deterministic text-to-token rule and the
// chained block hashes the prefix cache keys on (docs/simulator.md).
//
// Rule: one token per kCharsPerToken bytes of prompt text, rounded up, at
// least one. Block i of a prompt is the byte range
// [i * kCharsPerToken * block_size, (i + 1) * kCharsPerToken * block_size);
// only full blocks get a hash, like vLLM, which caches only full blocks.
// hash(block i) = hash_bytes(bytes of block i, seed = hash(block i - 1)), and
// block 0 is seeded with `salt` (model name, tenant, cache_salt), so equal
// text under different salts never shares cache.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace arbiter::engine {

inline constexpr std::uint32_t kCharsPerToken = 4;

// Token count of a text under the rule above.
std::uint32_t count_tokens(std::string_view text);

// 64-bit FNV-1a of `bytes` starting from `seed`, then a murmur-style finaliser
// so that chained values are well spread. Stable across runs and platforms.
std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed = 0);

struct PromptBlocks {
  std::uint32_t num_tokens = 0;             // count_tokens(text)
  std::vector<std::uint64_t> block_hashes;  // one per full block, chained
};

PromptBlocks prompt_blocks(std::string_view text, std::uint32_t block_size, std::uint64_t salt = 0);

}  // namespace arbiter::engine
