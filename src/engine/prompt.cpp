#include "engine/prompt.hpp"

namespace arbiter::engine {

std::uint32_t count_tokens(std::string_view text) {
  const std::size_t tokens = (text.size() + kCharsPerToken - 1) / kCharsPerToken;
  return tokens == 0 ? 1 : static_cast<std::uint32_t>(tokens);
}

std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed) {
  constexpr std::uint64_t kOffset = 0xcbf29ce484222325ULL;
  constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t h = kOffset ^ seed;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= kPrime;
  }
  // fmix64 from MurmurHash3: FNV alone leaves the high bits weak for short input.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

PromptBlocks prompt_blocks(std::string_view text, std::uint32_t block_size, std::uint64_t salt) {
  PromptBlocks out;
  out.num_tokens = count_tokens(text);
  const std::size_t block_chars = static_cast<std::size_t>(block_size) * kCharsPerToken;
  if (block_chars == 0) return out;
  out.block_hashes.reserve(text.size() / block_chars);
  std::uint64_t parent = salt;
  for (std::size_t at = 0; at + block_chars <= text.size(); at += block_chars) {
    parent = hash_bytes(text.substr(at, block_chars), parent);
    out.block_hashes.push_back(parent);
  }
  return out;
}

}  // namespace arbiter::engine
