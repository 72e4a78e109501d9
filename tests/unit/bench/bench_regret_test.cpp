// The regret yardstick (bench/regret.hpp) on hand-made results, and the
// sweep's scenario generator.
#include <gtest/gtest.h>

#include "bench/regret.hpp"
#include "bench/scenario_yaml.hpp"
#include "bench/sweep.hpp"

namespace arbiter::bench {
namespace {

Scenario three_classes() {
  Scenario s;
  s.classes.resize(3);
  s.classes[0].name = "critical";
  s.classes[0].policy.engine_priority = 0;
  s.classes[1].name = "chat";
  s.classes[1].policy.engine_priority = 2;
  s.classes[2].name = "batch";
  s.classes[2].policy.engine_priority = 10;
  s.classes[2].policy.background = true;
  return s;
}

GroupSummary group(double p99, uint64_t generated, uint64_t dropped) {
  GroupSummary g;
  g.generated = generated;
  g.outcomes[static_cast<std::size_t>(Outcome::kCompleted)] = generated - dropped;
  g.outcomes[static_cast<std::size_t>(Outcome::kDropped)] = dropped;
  g.ttft_ms.p99 = p99;
  return g;
}

PolicySummary policy(std::string name, double goodput) {
  PolicySummary p;
  p.policy = std::move(name);
  p.all.goodput_rps = goodput;
  p.classes = {group(100, 1000, 0), group(1000, 1000, 10), group(5000, 1000, 0)};
  return p;
}

RunResults same_everywhere() {
  RunResults r;
  for (const char* name : {"fifo", "priority", "hybrid"}) r.policies.push_back(policy(name, 10));
  return r;
}

PolicySummary& hybrid(RunResults& r) { return r.policies[2]; }

TEST(BenchRegret, IdenticalRunsHaveNoRegretAndMissingBaselinesAreNotCompared) {
  const Scenario s = three_classes();
  RunResults r = same_everywhere();
  EXPECT_TRUE(comparable(r));
  EXPECT_TRUE(find_regrets(s, r).empty());
  r.policies.erase(r.policies.begin());  // no fifo
  hybrid(r).policy = "hybrid";
  EXPECT_FALSE(comparable(r));
  r.policies[1].all.goodput_rps = 0;
  EXPECT_TRUE(find_regrets(s, r).empty());
}

TEST(BenchRegret, CriticalClassIsPrioritysFirstNonBackgroundClass) {
  Scenario s = three_classes();
  EXPECT_EQ(critical_class(s), 0u);
  s.classes[0].policy.engine_priority = 5;
  EXPECT_EQ(critical_class(s), 1u);
}

TEST(BenchRegret, GoodputBelow95PercentOfTheBetterBaseline) {
  const Scenario s = three_classes();
  RunResults r = same_everywhere();
  r.policies[0].all.goodput_rps = 20;  // fifo is the better baseline
  hybrid(r).all.goodput_rps = 19.1;
  EXPECT_TRUE(find_regrets(s, r).empty());
  hybrid(r).all.goodput_rps = 18.9;
  const auto regrets = find_regrets(s, r);
  ASSERT_EQ(regrets.size(), 1u);
  EXPECT_EQ(regrets[0].figure, "goodput req/s");
  EXPECT_DOUBLE_EQ(regrets[0].bound, 19);
}

TEST(BenchRegret, CriticalIsJudgedAgainstPriorityAlone) {
  const Scenario s = three_classes();
  RunResults r = same_everywhere();
  hybrid(r).classes[0].ttft_ms.p99 = 130;  // 1.1 * 100 + 20
  EXPECT_TRUE(find_regrets(s, r).empty());
  hybrid(r).classes[0].ttft_ms.p99 = 131;
  ASSERT_EQ(find_regrets(s, r).size(), 1u);
  hybrid(r).classes[0] = group(100, 1000, 1);  // one failure more than priority
  const auto regrets = find_regrets(s, r);
  ASSERT_EQ(regrets.size(), 1u);
  EXPECT_EQ(regrets[0].figure, "critical: failed requests");
}

TEST(BenchRegret, OtherClassesMustNotBeWorseThanBothBaselines) {
  const Scenario s = three_classes();
  RunResults r = same_everywhere();
  r.policies[1].classes[1].ttft_ms.p99 = 4000;  // priority starves chat
  hybrid(r).classes[1].ttft_ms.p99 = 3000;      // worse than fifo, better than priority
  EXPECT_TRUE(find_regrets(s, r).empty());
  hybrid(r).classes[1].ttft_ms.p99 = 4221;  // above 1.05 * 4000 + 20
  ASSERT_EQ(find_regrets(s, r).size(), 1u);
  hybrid(r).classes[1] = group(1000, 1000, 15);  // 1.5% failed against 1%: within 0.5 point
  EXPECT_TRUE(find_regrets(s, r).empty());
  hybrid(r).classes[1] = group(1000, 1000, 16);
  const auto regrets = find_regrets(s, r);
  ASSERT_EQ(regrets.size(), 1u);
  EXPECT_EQ(regrets[0].figure, "chat: failed share");
}

TEST(BenchRegret, NeverBelowDirectWhereDirectMeetsItsSlos) {
  const Scenario s = three_classes();
  RunResults r = same_everywhere();
  PolicySummary direct = policy("direct", 20);
  direct.all.good_share = 0.96;  // direct meets its SLOs: hybrid must keep 95% of its goodput
  r.policies.push_back(direct);
  auto regrets = find_regrets(s, r);
  ASSERT_EQ(regrets.size(), 1u);
  EXPECT_EQ(regrets[0].figure, "goodput req/s against direct");
  EXPECT_DOUBLE_EQ(regrets[0].bound, 19);
  r.policies.back().all.good_share = 0.9;  // direct itself misses them: not compared
  EXPECT_TRUE(find_regrets(s, r).empty());
}

TEST(BenchRegret, BackgroundIsJudgedOnlyThroughGoodput) {
  const Scenario s = three_classes();
  RunResults r = same_everywhere();
  hybrid(r).classes[2] = group(90000, 1000, 500);
  EXPECT_TRUE(find_regrets(s, r).empty());
}

TEST(BenchRegret, AFeatureMustNotCostADebouncedOrAnyClassItsTail) {
  // chat's P99 is 1000 ms in every run. Without debounce it would be 900:
  // hybrid's 1000 is over 1.05 x 900 + 20, a figure, but only for a class
  // that debounces. Without affinity it would be 990: within the bound.
  Scenario s = three_classes();
  RunResults r = same_everywhere();
  PolicySummary no_debounce = policy(std::string(kHybridNoDebounce), 10);
  no_debounce.classes[1].ttft_ms.p99 = 900;
  PolicySummary no_affinity = policy(std::string(kHybridNoAffinity), 10);
  no_affinity.classes[1].ttft_ms.p99 = 990;
  r.policies.push_back(no_debounce);
  r.policies.push_back(no_affinity);
  EXPECT_TRUE(find_regrets(s, r).empty());  // chat holds nothing: debounce cannot be the cause
  s.classes[1].policy.debounce = std::chrono::milliseconds(30);
  const auto figures = find_regrets(s, r);
  ASSERT_EQ(figures.size(), 1u);
  EXPECT_EQ(figures[0].figure, "debounce: chat: TTFT P99 ms");
  EXPECT_DOUBLE_EQ(figures[0].bound, 1.05 * 900 + 20);
}

TEST(BenchSweep, GeneratedScenariosParseAndAreDeterministic) {
  for (uint32_t i = 0; i < 100; ++i) {
    const std::string yaml = random_scenario_yaml(7, i);
    EXPECT_EQ(yaml, random_scenario_yaml(7, i));
    auto s = parse_scenario(yaml);
    ASSERT_TRUE(s.has_value()) << "scenario " << i << ": " << s.error() << "\n" << yaml;
    EXPECT_FALSE(s->classes.empty());
    EXPECT_TRUE(std::any_of(s->classes.begin(), s->classes.end(),
                            [](const ClassSpec& c) { return !c.policy.background; }));
  }
  EXPECT_NE(random_scenario_yaml(7, 0), random_scenario_yaml(8, 0));
}

TEST(BenchSweep, TheSchedulerSectionGoesIntoEveryScenario) {
  // --scheduler: the same scenario, with that scheduler section (the policy
  // still the run's).
  const SweepShape shape{.scheduler = "{tenant_headroom: 0.125}"};
  for (uint32_t i = 0; i < 5; ++i) {
    auto plain = parse_scenario(random_scenario_yaml(3, i));
    auto with = parse_scenario(random_scenario_yaml(3, i, shape));
    ASSERT_TRUE(plain.has_value() && with.has_value()) << i;
    EXPECT_EQ(plain->scheduler.tenant_headroom, 0);
    EXPECT_EQ(with->scheduler.tenant_headroom, 0.125);
    EXPECT_EQ(with->classes.size(), plain->classes.size());
  }
}

TEST(BenchSweep, AClassSchedulerGoesIntoThatClassBesideTypingThrough) {
  // --class-scheduler: that class's keys in every scenario that has it,
  // joined with --typing-through's key for completion; other classes and
  // the arrivals unchanged.
  // A debounce no class has by default, so the key can only come from the flag.
  const SweepShape shape{.typing_through = false, .class_name = "completion", .class_scheduler = "{debounce_ms: 77}"};
  int with_completion = 0;
  for (uint32_t i = 0; i < 20; ++i) {
    auto plain = parse_scenario(random_scenario_yaml(3, i));
    auto with = parse_scenario(random_scenario_yaml(3, i, shape));
    ASSERT_TRUE(plain.has_value() && with.has_value()) << i;
    ASSERT_EQ(with->classes.size(), plain->classes.size());
    for (std::size_t c = 0; c < with->classes.size(); ++c) {
      const bool completion = with->classes[c].name == "completion";
      with_completion += completion;
      EXPECT_EQ(with->classes[c].policy.debounce,
                completion ? std::chrono::milliseconds(77) : plain->classes[c].policy.debounce)
          << i;
      EXPECT_NE(plain->classes[c].policy.debounce, std::chrono::milliseconds(77)) << i;
      EXPECT_EQ(with->classes[c].policy.typing_through, completion ? false : plain->classes[c].policy.typing_through);
      EXPECT_EQ(with->classes[c].traffic.rate.base, plain->classes[c].traffic.rate.base);
    }
  }
  EXPECT_GT(with_completion, 0);  // the draw has the class somewhere
}

}  // namespace
}  // namespace arbiter::bench
