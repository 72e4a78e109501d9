// Clock and duration aliases shared by the test-support library.
#pragma once

#include <chrono>

namespace arbiter::test {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Millis = std::chrono::milliseconds;

inline double ms_between(TimePoint from, TimePoint to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace arbiter::test
