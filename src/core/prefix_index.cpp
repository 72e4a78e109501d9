#include "core/prefix_index.hpp"

#include <algorithm>
#include <numeric>

#include "core/prefix_blocks.hpp"

namespace arbiter::sched {
namespace {

// The next kept depth after d (see the header): every one of the first 8,
// then every ~quarter-further one.
constexpr uint32_t next_kept(uint32_t d) { return d + (d < 8 ? 1 : std::max<uint32_t>(1, d / 4)); }

constexpr std::size_t count_kept() {
  std::size_t n = 0;
  for (uint32_t d = 1; d <= kMaxPrefixBlocks; d = next_kept(d)) ++n;
  return n;
}

// Kept depths of the longest prompt (kMaxPrefixBlocks blocks).
constexpr std::size_t kMaxKept = count_kept();

}  // namespace

PrefixIndex::PrefixIndex(std::vector<uint64_t> capacity)
    : capacity_(std::move(capacity)),
      clock_(capacity_.size(), 0),
      epoch_(capacity_.size(), 0),
      total_capacity_(std::accumulate(capacity_.begin(), capacity_.end(), uint64_t{0})) {}

void PrefixIndex::set_capacity(uint32_t backend, uint64_t blocks) {
  if (backend >= capacity_.size()) return;
  total_capacity_ = total_capacity_ - capacity_[backend] + blocks;
  capacity_[backend] = blocks;
}

bool PrefixIndex::holds(const Holder& h) const {
  // Among the last capacity blocks recorded there, and not forgotten since.
  return h.tick >= epoch_[h.backend] && clock_[h.backend] - h.tick < capacity_[h.backend];
}

const PrefixIndex::Entry* PrefixIndex::find(uint64_t hash) const {
  const uint32_t slot = index_.find(key_of(hash));
  return slot == FlatIndex::kMissing ? nullptr : &slots_[slot];
}

const std::vector<uint32_t>& PrefixIndex::kept_depths() {
  static const std::vector<uint32_t> depths = [] {
    std::vector<uint32_t> out;
    for (uint32_t d = 1; d <= kMaxPrefixBlocks; d = next_kept(d)) out.push_back(d);
    return out;
  }();
  return depths;
}

std::size_t PrefixIndex::kept_within(std::size_t blocks) {
  const auto& depths = kept_depths();
  return static_cast<std::size_t>(std::upper_bound(depths.begin(), depths.end(), blocks) - depths.begin());
}

PrefixIndex::Match PrefixIndex::longest(std::span<const uint64_t> blocks) const {
  Match best;
  if (!enabled()) return best;
  // The deepest kept depth d <= |blocks| whose block d - 1 has a live holder.
  const auto& depths = kept_depths();
  std::size_t lo = 0;  // count of kept depths known held
  std::size_t hi = kept_within(blocks.size());
  // The search reads a few of the kept depths' entries. Loading every hash
  // slot, then every entry found, costs two waits for memory instead of two
  // per step of the search (at a pool's size the index is not in cache).
  std::array<const Entry*, kMaxKept> entries;
  for (std::size_t k = 0; k < hi; ++k) index_.prefetch(key_of(blocks[depths[k] - 1]));
  for (std::size_t k = 0; k < hi; ++k) {
    entries[k] = find(blocks[depths[k] - 1]);
    if (entries[k] != nullptr) __builtin_prefetch(entries[k]);
  }
  const Entry* deepest = nullptr;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    const Entry* e = entries[mid - 1];
    const bool held =
        e != nullptr && std::any_of(e->holders.begin(), e->holders.begin() + e->count,
                                    [this](const Holder& h) { return holds(h); });
    if (held) {
      lo = mid;
      deepest = e;
    } else {
      hi = mid - 1;
    }
  }
  if (lo == 0) return best;
  const std::size_t depth = depths[lo - 1];
  if (deepest == nullptr || deepest->hash != blocks[depth - 1]) deepest = find(blocks[depth - 1]);
  best.depth = static_cast<uint32_t>(depth);
  for (uint32_t i = 0; i < deepest->count; ++i) {
    if (holds(deepest->holders[i])) best.backends[best.count++] = deepest->holders[i].backend;
  }
  return best;
}

void PrefixIndex::record(uint32_t backend, std::span<const uint64_t> blocks) {
  if (backend >= capacity_.size() || capacity_[backend] == 0 || blocks.empty()) return;
  // Deepest first, so a prompt's earlier blocks are the more recent ones:
  // evicted last, which keeps what a backend holds prefix-closed.
  const auto& depths = kept_depths();
  const std::size_t kept = kept_within(blocks.size());
  // Every block's hash slot, then every entry found, loaded at once: one
  // wait for memory per pass instead of two per block.
  std::array<uint32_t, kMaxKept> found;
  for (std::size_t k = 0; k < kept; ++k) index_.prefetch(key_of(blocks[depths[k] - 1]));
  for (std::size_t k = 0; k < kept; ++k) {
    found[k] = index_.find(key_of(blocks[depths[k] - 1]));
    if (found[k] != FlatIndex::kMissing) __builtin_prefetch(&slots_[found[k]]);
  }
  for (std::size_t k = kept; k-- > 0;) {
    const std::size_t i = depths[k] - 1;
    const uint64_t tick = ++clock_[backend];
    const uint64_t key = key_of(blocks[i]);
    uint32_t slot = found[k];
    // Absent a moment ago; unless an equal block earlier in this loop put it
    // there (its slot is in cache now).
    if (slot == FlatIndex::kMissing) slot = index_.find(key);
    if (slot == FlatIndex::kMissing) {
      slot = static_cast<uint32_t>(slots_.size());
      slots_.push_back(Entry{.hash = blocks[i], .count = 0, .holders = {}});
      index_.insert(key, slot);
    }
    Entry& e = slots_[slot];
    // Move (or add) this backend to the front; the oldest holder falls off.
    uint32_t at = 0;
    while (at < e.count && e.holders[at].backend != backend) ++at;
    if (at == e.count) {
      if (e.count < kHolders) ++e.count;
      at = e.count - 1;
    }
    std::move_backward(e.holders.begin(), e.holders.begin() + at, e.holders.begin() + at + 1);
    e.holders[0] = Holder{.backend = backend, .tick = tick};
  }
  if (slots_.size() > 2 * total_capacity_ + 1024) sweep();
}

void PrefixIndex::forget(uint32_t backend) {
  if (backend < epoch_.size()) epoch_[backend] = clock_[backend] + 1;
}

void PrefixIndex::sweep() {
  // Amortised: runs once the entries have doubled past what can be live.
  std::vector<Entry> kept;
  kept.reserve(slots_.size() / 2);
  for (Entry& e : slots_) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < e.count; ++i) {
      if (holds(e.holders[i])) e.holders[n++] = e.holders[i];
    }
    e.count = n;
    if (n > 0) kept.push_back(e);
  }
  slots_ = std::move(kept);
  index_ = FlatIndex{};
  for (uint32_t i = 0; i < slots_.size(); ++i) index_.insert(key_of(slots_[i].hash), i);
}

}  // namespace arbiter::sched
