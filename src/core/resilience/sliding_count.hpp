// Events counted over a sliding window, kept as kSlices slices of
// window / kSlices: the count at t is what was added in t's slice and the
// kSlices - 1 before it. An event is counted for between window - slice and
// window after it was added, never longer, so nothing older than the window
// is ever read; and counts stay whole numbers, so "at least N requests"
// means exactly that. A fixed ring of slots: the same few dozen bytes
// however busy the backend or model it counts for.
//
// The traffic breaker (core/quota) keeps its own window, which takes the
// leaving slice pro rata and computes when demand will fall; this one only
// counts.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/scheduler_config.hpp"

namespace arbiter::resilience {

using sched::Clock;
using sched::Duration;
using sched::TimePoint;

class SlidingCount {
 public:
  static constexpr int64_t kSlices = 10;

  // `window` at least kSlices ticks of the clock (validated by the users).
  explicit SlidingCount(Duration window) : slice_(window / kSlices) {}

  // `now` at or after the latest add's (the callers clamp time going back).
  void add(TimePoint now, uint32_t n = 1) {
    const int64_t slot = slot_of(now);
    // Slots skipped since the last add hold counts of earlier windows.
    for (int64_t i = std::max(head_ + 1, slot - kSlices + 1); i <= slot; ++i) {
      total_ -= slots_[i % kSlices];
      slots_[i % kSlices] = 0;
    }
    head_ = std::max(head_, slot);
    slots_[slot % kSlices] += n;
    total_ += n;
  }

  // Events in the window ending at `now` (at or after the latest add). The
  // usual call, within the latest add's slice, reads the running total.
  uint64_t count(TimePoint now) const {
    const int64_t slot = slot_of(now);
    if (slot <= head_) return total_;
    if (slot - head_ >= kSlices) return 0;
    uint64_t total = total_;
    // The slots that left the window since the latest add.
    for (int64_t i = head_ + 1; i <= slot; ++i) total -= slots_[i % kSlices];
    return total;
  }

  void clear() {
    slots_.fill(0);
    total_ = 0;
  }

 private:
  int64_t slot_of(TimePoint t) const { return t.time_since_epoch() / slice_; }

  Duration slice_;
  std::array<uint32_t, kSlices> slots_{};
  int64_t head_ = 0;  // slot of the latest add: the newest with a count
  uint64_t total_ = 0;  // the slots' sum: the count within head_'s slice
};

}  // namespace arbiter::resilience
