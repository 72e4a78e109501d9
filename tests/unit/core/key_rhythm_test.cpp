// Adaptive debounce: per supersede key, a request is held only when the
// key's rhythm says a successor is due within the allowed hold.
#include "core/key_rhythm.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "scheduler_test_util.hpp"

namespace arbiter::sched {
namespace {

using namespace std::chrono_literals;
using testing::at_ms;
using testing::Harness;
using testing::named;
using testing::one_pool;

// Holds for a key typing bursts of `per_burst` keystrokes `gap_ms` apart,
// bursts 5 s apart, with at most `max_hold` allowed; the holds of burst `b`.
std::vector<Duration> holds(int gap_ms, int per_burst, int bursts, Duration max_hold) {
  KeyRhythms rhythms;
  std::vector<Duration> out;
  for (int b = 0; b < bursts; ++b) {
    for (int k = 0; k < per_burst; ++k) {
      out.push_back(rhythms.arrive("dev", at_ms(b * 5'000 + k * gap_ms), max_hold));
    }
  }
  return out;
}

TEST(KeyRhythm, AFastTypistsKeystrokesAreHeldOnceTheRhythmIsKnown) {
  const auto h = holds(60, 5, 3, 100ms);
  // Nothing is held before three typing gaps are known.
  EXPECT_EQ(h[0], Duration::zero());
  EXPECT_EQ(h[2], Duration::zero());
  // Then 1.5x the usual 60 ms gap, within the 100 ms allowed.
  EXPECT_EQ(h[3], 90ms);
  EXPECT_EQ(h[4], 90ms);
  EXPECT_EQ(h[9], 90ms);
  EXPECT_EQ(h[14], 90ms);
}

TEST(KeyRhythm, HoldsNeverExceedTheBound) {
  const auto h = holds(80, 5, 2, 100ms);
  EXPECT_EQ(h[9], 100ms);  // 1.5 x 80 = 120, cut to the 100 allowed
}

TEST(KeyRhythm, GapsLongerThanTheAllowedHoldAreNotWaitedFor) {
  // 150 ms gaps against a 100 ms bound: holding could absorb nothing.
  for (const Duration d : holds(150, 6, 3, 100ms)) EXPECT_EQ(d, Duration::zero());
}

TEST(KeyRhythm, RequestsRarelyFollowedAreNotHeld) {
  // One request every 2 s: never followed within a burst.
  KeyRhythms rhythms;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(rhythms.arrive("k", at_ms(i * 2'000), 100ms), Duration::zero());
  // Single keystrokes 2 s apart after a rhythm was learned bring "followed"
  // down until holds stop.
  KeyRhythms learned;
  for (int i = 0; i < 6; ++i) learned.arrive("k", at_ms(i * 50), 100ms);
  Duration last = learned.arrive("k", at_ms(300), 100ms);
  EXPECT_GT(last, Duration::zero());
  for (int i = 1; i <= 4; ++i) last = learned.arrive("k", at_ms(300 + i * 2'000), 100ms);
  EXPECT_EQ(last, Duration::zero());
}

TEST(KeyRhythm, IdleKeysAreForgotten) {
  // 3,000 keys, then 2,000 others two minutes later: the table is swept
  // when it doubles, and the idle ones go.
  KeyRhythms rhythms;
  for (int i = 0; i < 3'000; ++i) rhythms.arrive("old" + std::to_string(i), at_ms(i), 100ms);
  for (int i = 0; i < 2'000; ++i) rhythms.arrive("new" + std::to_string(i), at_ms(123'000 + i), 100ms);
  EXPECT_EQ(rhythms.keys(), 2'000u);
}

TEST(KeyRhythm, TheSchedulerHoldsOnlyWhereASuccessorIsDue) {
  // A completion class with adaptive debounce: once a fast typist's rhythm
  // is known, a keystroke is held and superseded by the next without ever
  // starting; without adaptive debounce (and no fixed one) each starts.
  for (const bool adaptive : {true, false}) {
    ClassPolicy c = named("completion");
    c.debounce = adaptive ? 100ms : Duration::zero();
    c.adaptive_debounce = adaptive;
    c.ttft_slo = 400ms;
    Harness h(one_pool({c}, {8}));
    std::vector<uint64_t> started;
    for (uint64_t k = 0; k < 6; ++k) {
      h.add(k, 0, 0, 10, at_ms(static_cast<int64_t>(k) * 50), "doc");
      for (const uint64_t u : h.poll(at_ms(static_cast<int64_t>(k) * 50))) started.push_back(u);
    }
    for (const uint64_t u : h.poll(at_ms(1'000))) started.push_back(u);
    if (adaptive) {
      // The first three start at once (no rhythm yet); from the fourth on
      // (three gaps known) each is held and superseded by the next; the
      // last starts when its hold ends.
      EXPECT_EQ(started, (std::vector<uint64_t>{0, 1, 2, 5}));
    } else {
      EXPECT_EQ(started, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5}));
    }
  }
}

}  // namespace
}  // namespace arbiter::sched
