// KV cache blocks of one engine: reference counts, the prefix cache (block
// hash -> block) and the eviction order of free blocks, as in vLLM V1.
//
// A free block either holds nothing reusable (no hash: a partial or generated
// block) or cached prompt content that stays findable by hash until the block
// is handed out again (evicted). Allocation takes empty blocks first, from a
// LIFO stack (recently freed, so cache-warm), then cached ones in LRU order:
// released cached blocks join the back of the list, a request's last block
// first, so a prompt's leading blocks are evicted last. O(1) per block.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/block_index.hpp"

namespace arbiter::engine {

class BlockPool {
 public:
  explicit BlockPool(std::uint32_t num_blocks);

  std::uint32_t num_blocks() const { return static_cast<std::uint32_t>(refs_.size()); }
  // Blocks the engine may use: num_blocks() minus the reservation.
  std::uint32_t capacity() const { return num_blocks() - reserved(); }
  // Blocks that can be allocated now (empty or cached).
  std::uint32_t num_free() const { return static_cast<std::uint32_t>(empty_.size()) + lru_count_; }
  // vLLM's kv_cache_usage_perc: share of usable blocks referenced by requests.
  double usage() const;

  // Prefix cache.
  std::optional<std::uint32_t> cached_block(std::uint64_t hash) const;
  void prefetch_cached(std::uint64_t hash) const { cache_.prefetch(hash); }
  // Takes a reference on a block found by cached_block().
  void acquire(std::uint32_t block);
  // Makes a computed full block findable by `hash`; no-op if the block already
  // has a hash or another block holds this one.
  void publish(std::uint32_t block, std::uint64_t hash);

  // Waste accounting: a cached block computed for a request that was then
  // aborted is tagged with `tag` (nonzero) until a later request reuses it
  // (claim() returns the tag once and clears it) or it is evicted.
  void tag_aborted(std::uint32_t block, std::uint8_t tag);
  std::uint8_t claim(std::uint32_t block);

  // Appends n blocks to `out`, evicting cached content if it must; false (and
  // nothing taken) when fewer than n are free.
  bool allocate(std::uint32_t n, std::vector<std::uint32_t>& out);
  // Drops one reference on each block; unused blocks become free.
  void release(std::span<const std::uint32_t> blocks);

  // Fault hook: holds up to `target` blocks out of use, taking free ones only.
  // Returns how many are held after the call.
  std::uint32_t reserve(std::uint32_t target);
  std::uint32_t reserved() const { return static_cast<std::uint32_t>(reserved_.size()); }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  struct Links {
    std::uint32_t prev = kNone;
    std::uint32_t next = kNone;
  };

  std::uint32_t take();  // one free block, evicting cached content
  void lru_push_back(std::uint32_t block);
  void lru_unlink(std::uint32_t block);

  // Per-block state in separate dense arrays: allocation and release touch
  // only refs_ and cached_, so consecutive blocks share cache lines.
  std::vector<std::uint32_t> refs_;   // requests using the block
  std::vector<std::uint8_t> cached_;  // 1 when published in cache_
  std::vector<std::uint8_t> aborted_;  // tag_aborted()'s tag while cached; 0: none
  std::vector<std::uint64_t> hash_;   // content hash, valid when cached_
  std::vector<Links> lru_;            // valid while free and cached

  BlockIndex cache_;                                        // hash -> block
  std::vector<std::uint32_t> empty_;                        // free blocks without content, LIFO
  std::uint32_t lru_head_ = kNone;                          // free cached blocks: next to evict
  std::uint32_t lru_tail_ = kNone;                          // most recently released
  std::uint32_t lru_count_ = 0;
  std::vector<std::uint32_t> reserved_;  // blocks held by the fault hook
};

}  // namespace arbiter::engine
