#include "engine/block_index.hpp"

#include <bit>

namespace arbiter::engine {

BlockIndex::BlockIndex(std::uint32_t max_entries) {
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(2 * std::size_t{max_entries}, 8));
  slots_.resize(capacity);
  mask_ = capacity - 1;
}

std::size_t BlockIndex::home(std::uint64_t hash) const {
  // Fibonacci hashing: callers' hashes are chained and may share low bits.
  return static_cast<std::size_t>((hash * 0x9E3779B97F4A7C15ULL) >> 32) & mask_;
}

std::size_t BlockIndex::slot_of(std::uint64_t hash) const {
  std::size_t i = home(hash);
  while (slots_[i].block != kEmpty && slots_[i].hash != hash) i = (i + 1) & mask_;
  return i;
}

std::optional<std::uint32_t> BlockIndex::find(std::uint64_t hash) const {
  const Slot& s = slots_[slot_of(hash)];
  if (s.block == kEmpty) return std::nullopt;
  return s.block;
}

bool BlockIndex::insert(std::uint64_t hash, std::uint32_t block) {
  Slot& s = slots_[slot_of(hash)];
  if (s.block != kEmpty) return false;
  s = {hash, block};
  ++size_;
  return true;
}

void BlockIndex::erase(std::uint64_t hash) {
  std::size_t hole = slot_of(hash);
  if (slots_[hole].block == kEmpty) return;
  --size_;
  // Backward-shift deletion: later entries of the probe run move into the
  // hole unless their home lies cyclically after it, so lookups never need
  // tombstones.
  for (std::size_t j = (hole + 1) & mask_; slots_[j].block != kEmpty; j = (j + 1) & mask_) {
    const std::size_t h = home(slots_[j].hash);
    const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = Slot{};
}

}  // namespace arbiter::engine
