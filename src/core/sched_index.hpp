// A flat hash map from 64-bit keys to 32-bit values (open addressing, linear
// probing). The scheduler looks a tenant queue up on every enqueue; a lookup
// here is usually one cache line, where std::unordered_map costs two
// dependent misses (bucket array, then node).
#pragma once

#include <cstdint>
#include <vector>

#include "core/mix.hpp"

namespace arbiter::sched {

class FlatIndex {
 public:
  static constexpr uint64_t kEmpty = UINT64_MAX;    // never a valid key
  static constexpr uint32_t kMissing = UINT32_MAX;  // find() of an absent key

  std::size_t size() const { return size_; }

  uint32_t find(uint64_t key) const {
    if (slots_.empty()) return kMissing;
    for (std::size_t i = home(key);; i = (i + 1) & mask()) {
      if (slots_[i].key == key) return slots_[i].value;
      if (slots_[i].key == kEmpty) return kMissing;
    }
  }

  // Starts loading the key's home slot, so a batch of lookups waits for
  // memory once rather than once per key (a large table lives in memory,
  // not cache).
  void prefetch(uint64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(key)]);
  }

  // The key must be absent.
  void insert(uint64_t key, uint32_t value) {
    // Grow at half full: probe sequences stay short.
    if (2 * (size_ + 1) > slots_.size()) grow();
    std::size_t i = home(key);
    while (slots_[i].key != kEmpty) i = (i + 1) & mask();
    slots_[i] = {key, value};
    ++size_;
  }

  // Backward-shift deletion: no tombstones, so lookups never slow down
  // after many erases.
  void erase(uint64_t key) {
    if (slots_.empty()) return;  // never grown: mask() would wrap
    std::size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == kEmpty) return;
      i = (i + 1) & mask();
    }
    for (std::size_t j = (i + 1) & mask();; j = (j + 1) & mask()) {
      if (slots_[j].key == kEmpty) break;
      // Move j back into the hole unless its home lies cyclically in (i, j].
      const std::size_t h = home(slots_[j].key);
      if (((j - h) & mask()) >= ((j - i) & mask())) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].key = kEmpty;
    --size_;
  }

  // Empty, keeping its table.
  void clear() {
    if (size_ == 0) return;
    for (Slot& s : slots_) s.key = kEmpty;
    size_ = 0;
  }

  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const Slot& s : slots_) {
      if (s.key != kEmpty) fn(s.key, s.value);
    }
  }

 private:
  struct Slot {
    uint64_t key = kEmpty;  // kEmpty: free
    uint32_t value = 0;     // payload
  };

  std::size_t mask() const { return slots_.size() - 1; }

  std::size_t home(uint64_t key) const {
    // splitmix64 finaliser: packed (pool, class, tenant) keys differ in few
    // bits, so they need mixing before masking.
    return static_cast<std::size_t>(mix_bits(key)) & mask();
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    size_ = 0;
    for (const Slot& s : old) {
      if (s.key != kEmpty) insert(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;  // power-of-two sized table
  std::size_t size_ = 0;     // occupied slots
};

}  // namespace arbiter::sched
