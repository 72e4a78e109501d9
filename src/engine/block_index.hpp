// The prefix cache's index, content hash -> KV block: open addressing with
// linear probing in a table sized once for every block of the engine at a
// load factor of at most 1/2, so it never rehashes and never allocates after
// construction. (std::unordered_map allocated a node per published block and
// freed one per eviction: over half the CPU time of a 1M-request simulation.)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace arbiter::engine {

class BlockIndex {
 public:
  // Holds up to `max_entries` hashes (one per KV block at most).
  explicit BlockIndex(std::uint32_t max_entries);

  std::optional<std::uint32_t> find(std::uint64_t hash) const;
  // Starts loading `hash`'s home slot: a caller about to find several
  // hashes prefetches them all first, so the memory misses overlap.
  void prefetch(std::uint64_t hash) const { __builtin_prefetch(&slots_[home(hash)]); }
  // False (and no change) when `hash` is already present.
  bool insert(std::uint64_t hash, std::uint32_t block);
  // No-op when absent.
  void erase(std::uint64_t hash);
  std::uint32_t size() const { return size_; }

 private:
  static constexpr std::uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t block = kEmpty;  // kEmpty: a free slot
  };

  std::size_t home(std::uint64_t hash) const;
  std::size_t slot_of(std::uint64_t hash) const;  // its slot, or the free slot ending its probe

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::uint32_t size_ = 0;
};

}  // namespace arbiter::engine
