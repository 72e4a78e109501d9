// Adaptive debounce (issue 12): per supersede key, the rhythm of its
// requests (an IDE user's keystrokes), and from it how long a new request is
// held before it may start. A held request that a successor supersedes costs
// the engine nothing; one that is not superseded pays the hold in its time to
// first token. So a request is held only when the key's requests are usually
// followed by another (most of a burst's keystrokes are) and the usual gap is
// within the hold the caller allows; otherwise it starts at once. A fixed
// debounce shorter than the typing gaps absorbs nothing and delays every
// request (the cancel-storm scenario: 30 ms against gaps of 100-200 ms).
// Pure: the clock is a parameter.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/scheduler_config.hpp"

namespace arbiter::sched {

class KeyRhythms {
 public:
  // Gaps longer than this end a burst: they say the previous request was
  // not followed, and are not typing gaps.
  static constexpr Duration kBurstGap = std::chrono::seconds(1);
  // Keys idle this long are forgotten (amortised sweep).
  static constexpr Duration kIdle = std::chrono::seconds(60);

  // Records an arrival of `key` at `now` (never earlier than the key's last)
  // and returns how long to hold it: zero, or at most `max_hold`.
  Duration arrive(std::string_view key, TimePoint now, Duration max_hold);

  std::size_t keys() const { return keys_.size(); }

 private:
  struct Rhythm {
    TimePoint last{};
    double gap_s = 0;     // typing gap, exponentially weighted
    double followed = 0;  // share of requests followed within kBurstGap, weighted
    uint32_t gaps = 0;    // typing gaps seen
    uint32_t arrivals = 0;
  };
  void sweep(TimePoint now);

  std::unordered_map<std::string, Rhythm> keys_;
  std::size_t sweep_at_ = 1024;  // sweep when the table reaches this size
};

}  // namespace arbiter::sched
