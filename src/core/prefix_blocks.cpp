#include "core/prefix_blocks.hpp"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace arbiter {

void prefix_blocks(std::string_view text, uint64_t salt, std::vector<uint64_t>& out) {
  out.clear();
  const std::size_t blocks = std::min(text.size() / kPrefixBlockBytes, kMaxPrefixBlocks);
  out.reserve(blocks);
  uint64_t h = salt;
  for (std::size_t i = 0; i < blocks; ++i) {
    h = XXH3_64bits_withSeed(text.data() + i * kPrefixBlockBytes, kPrefixBlockBytes, h);
    out.push_back(h);
  }
}

}  // namespace arbiter
