// A binary min-heap of (key, id) entries that tells its owner where each id
// sits, so an entry can be removed or re-keyed in O(log n) instead of being
// found by an O(n) scan. The scheduler keeps every queue in one of these.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace arbiter::sched {

// "Not in any heap": the position an id has once it has been removed.
inline constexpr uint32_t kNoPos = UINT32_MAX;

// Orders by primary (a time or a sequence number), then by seq, the arrival
// counter, so equal primaries keep their arrival order (no random ties).
struct OrderKey {
  int64_t primary;  // time_since_epoch().count() or 0
  uint64_t seq;     // monotonic tie-break
  friend bool operator<(const OrderKey& a, const OrderKey& b) {
    return a.primary != b.primary ? a.primary < b.primary : a.seq < b.seq;
  }
};

// Orders queues by virtual time (tokens charged / weight), then by the order
// in which they became backlogged.
struct ShareKey {
  double vtime;  // virtual start time of the queue's next request
  uint64_t seq;  // activation counter: equal vtimes go round-robin
  friend bool operator<(const ShareKey& a, const ShareKey& b) {
    return a.vtime != b.vtime ? a.vtime < b.vtime : a.seq < b.seq;
  }
};

// The heap stores keys inline (not looked up through the id) so a sift
// touches one contiguous array, and it is 4-ary: half the levels of a
// binary heap, and the four children of a node share one or two cache
// lines. Fewer levels also means fewer set_pos writes into the owners'
// records, which are the cache misses that dominate at 100k entries.
// Every mutating call takes set_pos(id, pos), invoked for each entry that
// moves, and with kNoPos for the entry that leaves.
template <typename Key>
class IndexedHeap {
 public:
  struct Entry {
    Key key;      // ordering key
    uint32_t id;  // owner's index of the element
  };

  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  const Entry& top() const { return items_.front(); }
  const Entry& at(uint32_t pos) const { return items_[pos]; }

  template <typename SetPos>
  void push(Key key, uint32_t id, SetPos&& set_pos) {
    items_.push_back({key, id});
    sift_up(static_cast<uint32_t>(items_.size() - 1), set_pos);
  }

  template <typename SetPos>
  void erase(uint32_t pos, SetPos&& set_pos) {
    set_pos(items_[pos].id, kNoPos);
    const auto last = static_cast<uint32_t>(items_.size() - 1);
    if (pos != last) {
      items_[pos] = items_[last];
      items_.pop_back();
      // The moved entry may belong above or below its new place.
      if (pos > 0 && items_[pos].key < items_[parent(pos)].key) {
        sift_up(pos, set_pos);
      } else {
        sift_down(pos, set_pos);
      }
    } else {
      items_.pop_back();
    }
  }

  template <typename SetPos>
  void rekey(uint32_t pos, Key key, SetPos&& set_pos) {
    const bool up = key < items_[pos].key;
    items_[pos].key = key;
    if (up) {
      sift_up(pos, set_pos);
    } else {
      sift_down(pos, set_pos);
    }
  }

 private:
  static constexpr uint32_t kArity = 4;
  static uint32_t parent(uint32_t pos) { return (pos - 1) / kArity; }

  template <typename SetPos>
  void sift_up(uint32_t pos, SetPos& set_pos) {
    Entry moving = items_[pos];
    while (pos > 0 && moving.key < items_[parent(pos)].key) {
      items_[pos] = items_[parent(pos)];
      set_pos(items_[pos].id, pos);
      pos = parent(pos);
    }
    items_[pos] = moving;
    set_pos(moving.id, pos);
  }

  template <typename SetPos>
  void sift_down(uint32_t pos, SetPos& set_pos) {
    const auto n = static_cast<uint32_t>(items_.size());
    Entry moving = items_[pos];
    for (;;) {
      const uint32_t first = kArity * pos + 1;
      if (first >= n) break;
      uint32_t child = first;
      const uint32_t last = first + kArity < n ? first + kArity : n;
      for (uint32_t c = first + 1; c < last; ++c) {
        if (items_[c].key < items_[child].key) child = c;
      }
      if (!(items_[child].key < moving.key)) break;
      items_[pos] = items_[child];
      set_pos(items_[pos].id, pos);
      pos = child;
    }
    items_[pos] = moving;
    set_pos(moving.id, pos);
  }

  std::vector<Entry> items_;  // heap-ordered entries
};

}  // namespace arbiter::sched
