#include "engine/block_pool.hpp"

#include <cassert>
#include <utility>

namespace arbiter::engine {

BlockPool::BlockPool(std::uint32_t num_blocks)
    : refs_(num_blocks),
      cached_(num_blocks),
      aborted_(num_blocks),
      hash_(num_blocks),
      lru_(num_blocks),
      cache_(num_blocks) {
  empty_.reserve(num_blocks);
  // Reversed so that block 0 is handed out first.
  for (std::uint32_t b = num_blocks; b > 0; --b) empty_.push_back(b - 1);
}

double BlockPool::usage() const {
  const std::uint32_t cap = capacity();
  if (cap == 0) return 1.0;
  return static_cast<double>(cap - num_free()) / static_cast<double>(cap);
}

std::optional<std::uint32_t> BlockPool::cached_block(std::uint64_t hash) const {
  return cache_.find(hash);
}

void BlockPool::acquire(std::uint32_t block) {
  if (refs_[block] == 0) lru_unlink(block);  // cached blocks are free only while on the list
  ++refs_[block];
}

void BlockPool::tag_aborted(std::uint32_t block, std::uint8_t tag) {
  if (cached_[block]) aborted_[block] = tag;
}

std::uint8_t BlockPool::claim(std::uint32_t block) {
  return std::exchange(aborted_[block], std::uint8_t{0});
}

void BlockPool::publish(std::uint32_t block, std::uint64_t hash) {
  if (cached_[block]) return;
  if (!cache_.insert(hash, block)) return;
  hash_[block] = hash;
  cached_[block] = 1;
}

bool BlockPool::allocate(std::uint32_t n, std::vector<std::uint32_t>& out) {
  if (n > num_free()) return false;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t block = take();
    refs_[block] = 1;
    out.push_back(block);
  }
  return true;
}

void BlockPool::release(std::span<const std::uint32_t> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    assert(refs_[*it] > 0);
    if (--refs_[*it] > 0) continue;
    if (cached_[*it]) {
      lru_push_back(*it);
    } else {
      empty_.push_back(*it);
    }
  }
}

std::uint32_t BlockPool::reserve(std::uint32_t target) {
  if (target > num_blocks()) target = num_blocks();
  while (reserved() > target) {
    empty_.push_back(reserved_.back());
    reserved_.pop_back();
  }
  while (reserved() < target && num_free() > 0) reserved_.push_back(take());
  return reserved();
}

std::uint32_t BlockPool::take() {
  if (!empty_.empty()) {
    const std::uint32_t block = empty_.back();
    empty_.pop_back();
    return block;
  }
  const std::uint32_t block = lru_head_;
  assert(block != kNone);
  lru_unlink(block);
  cache_.erase(hash_[block]);
  cached_[block] = 0;
  aborted_[block] = 0;  // evicted before anyone reused it: wasted after all
  return block;
}

void BlockPool::lru_push_back(std::uint32_t block) {
  lru_[block] = Links{.prev = lru_tail_, .next = kNone};
  if (lru_tail_ == kNone) {
    lru_head_ = block;
  } else {
    lru_[lru_tail_].next = block;
  }
  lru_tail_ = block;
  ++lru_count_;
}

void BlockPool::lru_unlink(std::uint32_t block) {
  const Links links = lru_[block];
  if (links.prev == kNone) {
    lru_head_ = links.next;
  } else {
    lru_[links.prev].next = links.next;
  }
  if (links.next == kNone) {
    lru_tail_ = links.prev;
  } else {
    lru_[links.next].prev = links.prev;
  }
  lru_[block] = Links{};
  --lru_count_;
}

}  // namespace arbiter::engine
