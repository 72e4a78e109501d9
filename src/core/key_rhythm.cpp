#include "core/key_rhythm.hpp"

#include <algorithm>

namespace arbiter::sched {

namespace {

constexpr double kWeight = 0.3;        // of the newest observation in the averages
constexpr uint32_t kMinGaps = 3;       // typing gaps seen before any hold
constexpr double kMinFollowed = 0.5;   // hold only when most requests are followed
constexpr double kGapMargin = 1.5;     // hold up to this multiple of the usual gap

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Duration KeyRhythms::arrive(std::string_view key, TimePoint now, Duration max_hold) {
  if (keys_.size() >= sweep_at_) sweep(now);
  Rhythm& r = keys_[std::string(key)];
  if (r.arrivals > 0) {
    const Duration gap = now - r.last;
    const bool followed = gap < kBurstGap;
    r.followed += kWeight * ((followed ? 1.0 : 0.0) - r.followed);
    if (followed) {
      r.gap_s = r.gaps == 0 ? seconds(gap) : r.gap_s + kWeight * (seconds(gap) - r.gap_s);
      ++r.gaps;
    }
  }
  r.last = now;
  ++r.arrivals;
  if (max_hold <= Duration::zero() || r.gaps < kMinGaps || r.followed < kMinFollowed ||
      r.gap_s > seconds(max_hold)) {
    return Duration::zero();
  }
  const auto hold = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(kGapMargin * r.gap_s));
  return std::min(hold, max_hold);
}

void KeyRhythms::sweep(TimePoint now) {
  std::erase_if(keys_, [&](const auto& entry) { return now - entry.second.last > kIdle; });
  sweep_at_ = std::max<std::size_t>(1024, 2 * keys_.size());
}

}  // namespace arbiter::sched
