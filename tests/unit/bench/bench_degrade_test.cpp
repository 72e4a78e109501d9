// Staged degradation in virtual mode (docs/overload.md; hybrid runs it by
// default): it is hybrid-no-degradation wherever the load stays below its
// thresholds, and past them it
// caps, pauses and sheds the degradable classes, never the protected one,
// counts what it cut apart from goodput, and does not flap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "bench/scenario_yaml.hpp"
#include "bench/virtual_run.hpp"

namespace arbiter::bench::bench_degrade_test {
namespace {

Scenario load(const char* file) {
  auto s = load_scenario(std::string(ARBITER_SOURCE_DIR "/bench/scenarios/") + file);
  EXPECT_TRUE(s) << s.error();
  return *s;
}

uint64_t count(const GroupSummary& g, Outcome o) { return g.outcomes[static_cast<std::size_t>(o)]; }

double highest_load(const PolicySummary& p) {
  double most = 0;
  for (const Sample& s : p.series) most = std::max(most, s.load);
  return most;
}

TEST(BenchDegrade, BelowItsThresholdsItChangesNothing) {
  // Scenarios whose load coefficient stays under the elevated stage (the
  // burst at 2x of a 60% day is absorbed by deferring batch work), each with
  // three arrival seeds: the same requests end the same way.
  for (const char* file : {"smoke.yaml", "burst-200.yaml", "completion-vs-chat.yaml"}) {
    const Scenario s = load(file);
    for (uint64_t seed = s.seed; seed < s.seed + 3; ++seed) {
      SCOPED_TRACE(std::string(file) + " seed " + std::to_string(seed));
      const PolicySummary hybrid = run_virtual(s, "hybrid-no-degradation", seed);
      const PolicySummary degrade = run_virtual(s, "hybrid", seed);
      ASSERT_LT(highest_load(degrade), s.degradation.elevated_at);
      EXPECT_EQ(degrade.degrade_transitions, 0u);
      EXPECT_EQ(degrade.all.capped + degrade.all.shed, 0u);
      EXPECT_EQ(degrade.all.outcomes, hybrid.all.outcomes);
      EXPECT_EQ(degrade.all.good, hybrid.all.good);
      EXPECT_TRUE(std::isnan(hybrid.series.front().load));  // no degradation, no load series
    }
  }
}

TEST(BenchDegrade, PastItsThresholdsItCapsAndShedsButNeverTheProtectedClass) {
  // The overload scenario with thresholds a compute-bound fleet reaches
  // (its KV cache stays under 20% full: docs/benchmarks.md).
  Scenario s = load("overload.yaml");
  s.degradation.elevated_at = 0.3;
  s.degradation.high_at = 0.4;
  s.degradation.shed_at = 0.5;
  const PolicySummary p = run_virtual(s, "hybrid", s.seed);
  const auto klass = [&](std::string_view name) -> const GroupSummary& {
    return *std::find_if(p.classes.begin(), p.classes.end(), [&](const GroupSummary& g) { return g.name == name; });
  };
  const GroupSummary& critical = klass("critical");
  const GroupSummary& chat = klass("chat");
  const GroupSummary& batch = klass("batch");
  EXPECT_EQ(critical.capped + critical.shed, 0u) << "the protected class was degraded";
  EXPECT_GT(chat.capped, 0u);
  EXPECT_GT(chat.shed, 0u);
  EXPECT_GT(batch.shed, 0u);
  EXPECT_EQ(batch.capped, 0u);  // background work is paused and shed, never cut
  for (const GroupSummary& g : p.classes) {
    EXPECT_LE(g.shed, count(g, Outcome::kRejected)) << g.name;
    EXPECT_LE(g.good_degraded, g.capped) << g.name;
    EXPECT_LE(g.good + g.good_degraded, count(g, Outcome::kCompleted)) << g.name;
  }
  // Batch classes lower in weight are shed more often than chat.
  EXPECT_GT(static_cast<double>(batch.shed) / batch.generated, static_cast<double>(chat.shed) / chat.generated);
  // No flapping: the hold (10 s) bounds the steps down, so a 480 s run of
  // three overload minutes changes stage a few dozen times at most.
  EXPECT_GT(p.degrade_transitions, 0u);
  EXPECT_LE(p.degrade_transitions, 2 * static_cast<uint64_t>(s.duration_s + s.drain_s) / 10);
  EXPECT_GT(p.stage_seconds[3], 0);
}

TEST(BenchDegrade, TheHighStageSendsDegradableClassesToTheVariantsEngines) {
  Scenario s = load("overload-variant.yaml");
  ASSERT_EQ(s.engine.variant_count, 4u);
  EXPECT_EQ(pool_layout(s).variant_pool, 1u);  // after the model's one pool
  s.degradation.elevated_at = 0.3;
  s.degradation.high_at = 0.4;
  const PolicySummary with = run_virtual(s, "hybrid", s.seed);
  const PolicySummary without = run_virtual(s, "hybrid-no-degradation", s.seed);
  EXPECT_EQ(without.all.variant, 0u);
  for (const GroupSummary& g : with.classes) {
    SCOPED_TRACE(g.name);
    if (g.name == "critical" || g.name == "batch") {
      EXPECT_EQ(g.variant, 0u);  // protected; background work is paused, not rerouted
    } else {
      EXPECT_GT(g.variant, 0u);
      EXPECT_LE(g.good_degraded, g.variant + g.capped);
    }
  }
  // Every request still ends exactly once.
  uint64_t ended = 0;
  for (const uint64_t o : with.all.outcomes) ended += o;
  EXPECT_EQ(ended, with.all.generated);
}

TEST(BenchDegrade, AVariantNamesAKnownProfile) {
  auto bad = parse_scenario(R"(name: v
finding: f
engine: {profile: tiny, variant: {profile: nope, count: 1}}
classes: [{name: chat, traffic: {}}]
)");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("engine.variant.profile"), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace arbiter::bench::bench_degrade_test
