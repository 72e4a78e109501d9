// The inter-event gaps of one backend's streamed answers, counted by the
// relays (relay/relay_stream.cpp, relay_aggregate.cpp) and taken at each engine-signals scrape by
// adaptive capacity (gateway/backend_capacity.hpp): how many gaps, how
// many within the backend's gap target, and their time; the first
// events of runs against their class's first-token headroom; and the runs
// their clients left. The relays of every I/O thread
// count into it at once: relaxed atomics only, no lock, no allocation on
// the per-event path. The counts need no order with anything else: a gap
// counted a scrape late only moves it to the next interval.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "core/adaptive_capacity.hpp"

namespace arbiter {

class StreamGaps {
 public:
  using Clock = std::chrono::steady_clock;

  // `events` content events of one stream arrived `since` after its
  // previous ones (one read can bring several: each is taken to have waited
  // its share of `since`).
  void count(uint32_t events, Clock::duration since) noexcept {
    total_.fetch_add(events, std::memory_order_relaxed);
    ticks_.fetch_add(since.count(), std::memory_order_relaxed);
    if (since.count() <= target_ticks_.load(std::memory_order_relaxed) * static_cast<int64_t>(events)) {
      within_.fetch_add(events, std::memory_order_relaxed);
      within_ticks_.fetch_add(since.count(), std::memory_order_relaxed);
    }
  }

  // A run's first events, `slow` when they came later after the request
  // was sent than its class's ttft_slo leaves the engine (ttft_headroom).
  void count_first(bool slow) noexcept {
    firsts_.fetch_add(1, std::memory_order_relaxed);
    if (slow) firsts_slow_.fetch_add(1, std::memory_order_relaxed);
  }

  // A run's client left before its answer ended (first_token_bound's
  // requests only; GapCounts::abandoned).
  void count_abandoned() noexcept { abandoned_.fetch_add(1, std::memory_order_relaxed); }

  // The gap target until the next call (the monitor's, at each scrape).
  void set_target(Clock::duration target) noexcept {
    target_ticks_.store(target.count(), std::memory_order_relaxed);
  }

  // What was counted since the last take (within <= total, or about: the
  // counters are taken one after the other).
  sched::GapCounts take() noexcept {
    const auto seconds = [](int64_t ticks) { return std::chrono::duration<double>(Clock::duration(ticks)).count(); };
    return {.total = total_.exchange(0, std::memory_order_relaxed),
            .within = within_.exchange(0, std::memory_order_relaxed),
            .seconds = seconds(ticks_.exchange(0, std::memory_order_relaxed)),
            .within_seconds = seconds(within_ticks_.exchange(0, std::memory_order_relaxed)),
            .firsts = firsts_.exchange(0, std::memory_order_relaxed),
            .firsts_slow = firsts_slow_.exchange(0, std::memory_order_relaxed),
            .abandoned = abandoned_.exchange(0, std::memory_order_relaxed)};
  }

 private:
  std::atomic<uint64_t> total_{0};
  std::atomic<uint64_t> within_{0};
  std::atomic<int64_t> ticks_{0};         // the gaps' summed length, Clock ticks
  std::atomic<int64_t> within_ticks_{0};  // of it, in gaps within the target
  std::atomic<uint64_t> firsts_{0};
  std::atomic<uint64_t> firsts_slow_{0};
  std::atomic<uint64_t> abandoned_{0};
  std::atomic<int64_t> target_ticks_{0};  // Clock ticks; 0 until set (nothing within)
};

}  // namespace arbiter
