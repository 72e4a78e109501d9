// Which backends of one pool were recently sent each prompt prefix block
// (core/prefix_blocks.hpp): the gateway's picture of its engines' prefix
// caches, which it cannot see, as SGLang's cache-aware router and the
// inference gateway's prefix scorer keep one. Approximate by design: a block
// counts as cached on a backend while it is among the last `capacity`
// blocks recorded there (LRU by recording, the engines' own eviction order
// for blocks in use), and each block remembers its kHolders most recent
// backends.
//
// Memory: an 80-byte entry per distinct block and 16 bytes of hash slot,
// at most twice the sum of the capacities (a sweep drops what no backend
// holds any more): a pool of 64 engines caching 500k tokens each (250k
// 128-token blocks) costs at most ~50 MB here.
//
// Only some depths are kept: every block of the first 8, then every
// ~quarter-further one (8, 10, 12, 15, 18, 22, 27, ...), 19 positions for
// a 64-block (8k-token) prompt instead of 64. At a pool's size the index
// lives in memory, not cache, and each position costs a miss; a match is
// then known to within a quarter of its depth, plenty to tell backends apart.
// Both calls load every position's hash slot, then every entry, before
// using any: the misses overlap (BM_AffinityCycle 2.65 -> 2.2 us).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/sched_index.hpp"

namespace arbiter::sched {

class PrefixIndex {
 public:
  static constexpr uint32_t kHolders = 4;

  // One capacity per backend, in blocks; 0: nothing is recorded there.
  explicit PrefixIndex(std::vector<uint64_t> capacity = {});

  struct Match {
    uint32_t depth = 0;                   // blocks matched from the start; 0: none
    uint32_t count = 0;                   // backends holding that depth
    std::array<uint32_t, kHolders> backends{};  // most recent first
  };

  // The deepest prefix of `blocks` some backend still holds, and which.
  // A binary search: recording touches a prompt's blocks together, so what
  // a backend holds is prefix-closed. One lookup per kept depth (loaded
  // together), O(log |blocks|) entries examined.
  Match longest(std::span<const uint64_t> blocks) const;

  // `backend` was sent a prompt with these blocks. O(|blocks|).
  void record(uint32_t backend, std::span<const uint64_t> blocks);

  // A backend's cache is gone (it restarted or went down): forget it. O(1).
  void forget(uint32_t backend);

  // A backend's cache holds `blocks` (its engine reported its KV size). A
  // smaller one counts fewer of the blocks recorded there as held. O(1).
  void set_capacity(uint32_t backend, uint64_t blocks);
  uint64_t capacity(uint32_t backend) const { return backend < capacity_.size() ? capacity_[backend] : 0; }

  std::size_t entries() const { return slots_.size(); }  // distinct blocks kept, live or not swept
  bool enabled() const { return total_capacity_ > 0; }

 private:
  struct Holder {
    uint32_t backend = 0;
    uint64_t tick = 0;  // the backend's clock when it was recorded there
  };
  struct Entry {
    uint64_t hash = 0;
    uint32_t count = 0;  // holders in use
    std::array<Holder, kHolders> holders{};
  };

  static uint64_t key_of(uint64_t hash) { return hash == FlatIndex::kEmpty ? hash - 1 : hash; }
  // The kept depths (block index + 1) up to kMaxPrefixBlocks, ascending.
  static const std::vector<uint32_t>& kept_depths();
  // How many kept depths a prompt of `blocks` blocks reaches.
  static std::size_t kept_within(std::size_t blocks);
  bool holds(const Holder& h) const;
  const Entry* find(uint64_t hash) const;
  void sweep();  // drops holders no longer cached, and entries left with none

  std::vector<uint64_t> capacity_;  // per backend, blocks
  std::vector<uint64_t> clock_;     // per backend: blocks recorded so far (+1 per block)
  std::vector<uint64_t> epoch_;     // per backend: ticks below this were forgotten
  uint64_t total_capacity_ = 0;
  FlatIndex index_;                 // block hash -> entry slot
  std::vector<Entry> slots_;        // entries, dense (a sweep compacts them)
};

}  // namespace arbiter::sched
