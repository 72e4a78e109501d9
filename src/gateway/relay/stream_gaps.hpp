// The inter-event gaps of one backend's streamed answers, counted by the
// relays (upstream_relay.cpp) and taken at each engine-signals scrape by
// adaptive capacity (gateway/backend_capacity.hpp): how many gaps, and how
// many within the backend's gap target. The relays of every I/O thread
// count into it at once: relaxed atomics only, no lock, no allocation on
// the per-event path. The counts need no order with anything else: a gap
// counted a scrape late only moves it to the next interval.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace arbiter {

class StreamGaps {
 public:
  using Clock = std::chrono::steady_clock;

  // `events` content events of one stream arrived `since` after its
  // previous ones (one read can bring several: each is taken to have waited
  // its share of `since`).
  void count(uint32_t events, Clock::duration since) noexcept {
    total_.fetch_add(events, std::memory_order_relaxed);
    if (since.count() <= target_ticks_.load(std::memory_order_relaxed) * static_cast<int64_t>(events)) {
      within_.fetch_add(events, std::memory_order_relaxed);
    }
  }

  // The gap target until the next call (the monitor's, at each scrape).
  void set_target(Clock::duration target) noexcept {
    target_ticks_.store(target.count(), std::memory_order_relaxed);
  }

  struct Counts {
    uint64_t total = 0;
    uint64_t within = 0;  // <= total, or about: the two are taken one after the other
  };
  // What was counted since the last take.
  Counts take() noexcept {
    return {total_.exchange(0, std::memory_order_relaxed), within_.exchange(0, std::memory_order_relaxed)};
  }

 private:
  std::atomic<uint64_t> total_{0};
  std::atomic<uint64_t> within_{0};
  std::atomic<int64_t> target_ticks_{0};  // Clock ticks; 0 until set (nothing within)
};

}  // namespace arbiter
