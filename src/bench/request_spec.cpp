#include "bench/request_spec.hpp"

#include <algorithm>

#include "core/prefix_blocks.hpp"
#include "core/mix.hpp"

namespace arbiter::bench {

uint64_t own_tokens_key(const RequestSpec& spec) {
  return spec.own_key != 0 ? spec.own_key : splitmix64(spec.id ^ 0x5bd1e995ULL) | 1;
}

void prompt_block_hashes(const RequestSpec& spec, uint32_t block_size, std::vector<uint64_t>& out) {
  out.clear();
  const uint32_t total = spec.prompt_tokens();
  // The segment (key and start) holding token t.
  const uint64_t unique_key = own_tokens_key(spec);
  auto locate = [&](uint32_t t) -> std::pair<uint64_t, uint32_t> {
    if (t < spec.prefix.tokens) return {spec.prefix.key, 0};
    if (t < spec.prefix.tokens + spec.history.tokens) return {spec.history.key, spec.prefix.tokens};
    return {unique_key, spec.prefix.tokens + spec.history.tokens};
  };
  // Blocks wholly of the request's own tokens can never be found again
  // (unless a keystroke typing along extends them: own_key): not hashing
  // them spares the engine's prefix cache (and the simulation) the work.
  const uint32_t shared =
      spec.own_key != 0 ? total : std::min(total, spec.prefix.tokens + spec.history.tokens + block_size - 1);
  uint64_t h = 0;
  for (uint32_t start = 0; start + block_size <= shared; start += block_size) {
    const auto [first_key, first_start] = locate(start);
    const auto [last_key, last_start] = locate(start + block_size - 1);
    // A block's content: which segments it covers and where in them it starts.
    const uint64_t content = splitmix64(first_key ^ splitmix64(start - first_start)) ^ (last_key * 31) ^
                             (last_start == first_start ? 0 : last_start);
    h = splitmix64(h ^ content);
    out.push_back(h);
  }
}

void affinity_blocks(const std::vector<uint64_t>& engine_blocks, uint32_t block_size,
                     std::vector<uint64_t>& out) {
  out.clear();
  const std::size_t step = std::max<std::size_t>(1, kPrefixBlockTokens / std::max<uint32_t>(block_size, 1));
  for (std::size_t i = step; i <= engine_blocks.size() && out.size() < kMaxPrefixBlocks; i += step) {
    out.push_back(engine_blocks[i - 1]);
  }
}

}  // namespace arbiter::bench
