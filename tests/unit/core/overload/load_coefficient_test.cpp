// The load coefficient's terms, their weighting, the cache window, the
// smoothing and the pool mean (core/overload/load_coefficient.hpp).
#include "core/overload/load_coefficient.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <vector>

namespace arbiter::overload::load_coefficient_test {
namespace {

using std::chrono::milliseconds;

sched::TimePoint at_ms(int64_t ms) { return sched::TimePoint(milliseconds(ms)); }

BackendView fresh_view() {
  return {.fresh = true,
          .engine_running = 32,
          .engine_waiting = 16,
          .kv_usage = 0.5,
          .cache_hit_rate = 0.75,
          .slots = 64,
          .own_running = 20,
          .own_background = 0,
          .queued = 0};
}

TEST(LoadCoefficient, TheReportsFormulaOnFreshFigures) {
  const LoadTerms t = load_terms(fresh_view());
  EXPECT_DOUBLE_EQ(*t.busy, 0.5);         // 32 of 64
  EXPECT_DOUBLE_EQ(*t.kv, 0.5);
  EXPECT_DOUBLE_EQ(*t.queue, 0.25);       // 16 waiting for 64 slots
  EXPECT_DOUBLE_EQ(*t.cache_miss, 0.25);
  EXPECT_DOUBLE_EQ(*combine(t, {}), 0.4 * 0.5 + 0.3 * 0.5 + 0.2 * 0.25 + 0.1 * 0.25);
}

TEST(LoadCoefficient, AFullPrefillQueueIsABusyEngineWhileWorkWaits) {
  // Long prompts: 16 sequences of 64 slots, but the prefill queue is full.
  BackendView v = fresh_view();
  v.engine_running = 16;
  v.own_running = 16;
  v.prefill_fill = 1;
  v.queued = 0;  // nothing waits for it: the engine is not holding anyone back
  EXPECT_DOUBLE_EQ(*load_terms(v).busy, 0.25);
  v.queued = 8;
  EXPECT_DOUBLE_EQ(*load_terms(v).busy, 1);
  v.prefill_fill = 0.4;  // below the running share: the larger counts
  v.engine_running = 48;
  EXPECT_DOUBLE_EQ(*load_terms(v).busy, 0.75);
}

TEST(LoadCoefficient, BackgroundWorkIsNotPressure) {
  BackendView v = fresh_view();
  v.engine_running = 64;  // full, but 40 of them are this gateway's batch work
  v.own_background = 40;
  v.own_running = 24;
  EXPECT_DOUBLE_EQ(*load_terms(v).busy, 0.375);
  // Other replicas' work on the engine still counts: it is not ours to preempt.
  v.own_background = 10;
  EXPECT_DOUBLE_EQ(*load_terms(v).busy, 54.0 / 64);
}

TEST(LoadCoefficient, AStaleEngineHasNoEngineTermsAndTheWeightsScale) {
  BackendView v = fresh_view();
  v.fresh = false;
  v.queued = 32;
  const LoadTerms t = load_terms(v);
  EXPECT_FALSE(t.kv);
  EXPECT_FALSE(t.cache_miss);
  EXPECT_DOUBLE_EQ(*t.busy, 20.0 / 64);  // the gateway's own requests only
  EXPECT_DOUBLE_EQ(*t.queue, 0.5);       // its own queue only
  EXPECT_DOUBLE_EQ(*combine(t, {}), (0.4 * 20.0 / 64 + 0.2 * 0.5) / 0.6);
}

TEST(LoadCoefficient, TermsAreClampedAndNonFiniteFiguresReadAsFull) {
  BackendView v = fresh_view();
  v.engine_running = 1000;
  v.engine_waiting = -5;  // nonsense from an engine: no negative pressure
  v.kv_usage = std::numeric_limits<double>::infinity();
  v.slots = 0;  // read as 1
  const LoadTerms t = load_terms(v);
  EXPECT_DOUBLE_EQ(*t.busy, 1);
  EXPECT_DOUBLE_EQ(*t.queue, 0);
  EXPECT_DOUBLE_EQ(*t.kv, 1);
}

TEST(LoadCoefficient, NoKnownTermOrNoWeightGivesNoLoad) {
  EXPECT_FALSE(combine({}, {}));
  EXPECT_FALSE(combine(LoadTerms{.kv = 0.5}, LoadWeights{.busy = 1, .kv = 0, .queue = 1, .cache_miss = 1}));
}

TEST(LoadCoefficient, LIsAWeightedMeanOfItsTermsWithinTheirRange) {
  // Property: for random terms and weights, L lies between the smallest and
  // the largest known term, and rises when any term with weight rises.
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 10'000; ++i) {
    LoadTerms t;
    if (u(rng) < 0.8) t.busy = u(rng);
    if (u(rng) < 0.8) t.kv = u(rng);
    if (u(rng) < 0.8) t.queue = u(rng);
    if (u(rng) < 0.8) t.cache_miss = u(rng);
    const LoadWeights w{u(rng), u(rng), u(rng), u(rng)};
    const auto l = combine(t, w);
    if (!l) continue;
    double lo = 1, hi = 0;
    for (const auto& term : {t.busy, t.kv, t.queue, t.cache_miss}) {
      if (term) lo = std::min(lo, *term), hi = std::max(hi, *term);
    }
    ASSERT_GE(*l, lo - 1e-12);
    ASSERT_LE(*l, hi + 1e-12);
    if (t.busy && *t.busy < 0.9 && w.busy > 0) {
      LoadTerms more = t;
      *more.busy += 0.1;
      ASSERT_GT(*combine(more, w), *l);
    }
  }
}

TEST(LoadCoefficient, TheCacheWindowIsTheRatioOfDifferences) {
  const PrefixCacheCounts a{1000, 600};
  const PrefixCacheCounts b{2000, 1400};
  EXPECT_DOUBLE_EQ(*window_hit_rate(a, b), 0.8);
  EXPECT_FALSE(window_hit_rate(std::nullopt, b));  // first reading
  EXPECT_FALSE(window_hit_rate(b, b));             // nothing looked up
  EXPECT_FALSE(window_hit_rate(b, a));             // the engine restarted: counters reset
}

TEST(LoadCoefficient, TheCacheWindowKeepsTheLastRateWhileAWindowHasNone) {
  CacheWindow w;
  EXPECT_FALSE(w.update(PrefixCacheCounts{1000, 600}));                    // the first reading
  EXPECT_DOUBLE_EQ(*w.update(PrefixCacheCounts{2000, 1400}), 0.8);        // a window
  EXPECT_DOUBLE_EQ(*w.update(PrefixCacheCounts{2000, 1400}), 0.8);        // a tick: the same scrape
  EXPECT_DOUBLE_EQ(*w.update(std::nullopt), 0.8);                         // no counters this scrape
  EXPECT_DOUBLE_EQ(*w.update(PrefixCacheCounts{10, 1}), 0.8);             // the engine restarted
  EXPECT_DOUBLE_EQ(*w.update(PrefixCacheCounts{110, 51}), 0.5);           // a window after it
}

TEST(LoadCoefficient, SmoothingFollowsATimeConstant) {
  Smoothed s;
  const auto tau = milliseconds(1000);
  EXPECT_DOUBLE_EQ(s.update(0, at_ms(0), tau), 0);  // the first sample as is
  // A step to 1: after one time constant the average is 1 - 1/e of the way.
  const double after = s.update(1, at_ms(1000), tau);
  EXPECT_NEAR(after, 1 - std::exp(-1.0), 1e-12);
  // Samples every 100 ms for 1 s move it the same distance as one after 1 s.
  Smoothed fine;
  fine.update(0, at_ms(0), tau);
  double v = 0;
  for (int t = 100; t <= 1000; t += 100) v = fine.update(1, at_ms(t), tau);
  EXPECT_NEAR(v, after, 1e-12);
  // tau 0: no smoothing.
  Smoothed raw;
  raw.update(0.2, at_ms(0), {});
  EXPECT_DOUBLE_EQ(raw.update(0.9, at_ms(1), {}), 0.9);
  // A sample from the past does not move time back.
  EXPECT_DOUBLE_EQ(s.update(after, at_ms(500), tau), after);
}

TEST(LoadCoefficient, APoolIsTheSlotWeightedMeanOfItsKnownBackends) {
  const std::vector<BackendLoad> backends = {{0.9, 64}, {0.1, 192}, {std::nullopt, 64}};
  EXPECT_DOUBLE_EQ(*pool_load(backends), (0.9 * 64 + 0.1 * 192) / 256);
  EXPECT_FALSE(pool_load(std::vector<BackendLoad>{{std::nullopt, 8}}));
}

}  // namespace
}  // namespace arbiter::overload::load_coefficient_test
