// The yardstick of DECISIONS.md (bench/yardstick.hpp) and the figures it
// reads: D3's P99 and D2's flooders from the Collector, the per-run rules
// on hand-made results, D1's majority-and-median rule.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bench/results.hpp"
#include "bench/scenario_yaml.hpp"
#include "bench/stats.hpp"
#include "bench/yardstick.hpp"

namespace arbiter::bench::bench_yardstick_test {
namespace {

RequestRecord completed(uint16_t klass, uint16_t tenant, double ttft_s) {
  return {.klass = klass, .tenant = tenant, .outcome = Outcome::kCompleted, .arrival = 1,
          .first_token = 1 + ttft_s, .finished = 2 + ttft_s, .output_tokens = 1};
}

RequestRecord failed(uint16_t klass, uint16_t tenant, Outcome outcome = Outcome::kDropped) {
  return {.klass = klass, .tenant = tenant, .outcome = outcome, .arrival = 1};
}

Scenario parsed(const char* yaml) {
  auto s = parse_scenario(yaml);
  EXPECT_TRUE(s) << s.error();
  return *s;
}

TEST(BenchYardstick, P99CountsFailedRequestsAsSlowestAndSupersededNotAtAll) {
  const Scenario s = parsed(R"(
name: t
duration_s: 10
tenants: [{name: a}]
classes:
  - {name: chat, slo: {ttft_ms: 100}, traffic: {}}
)");
  // 98 served (1..98 ms), 2 failed: rank 99 of 100 is a failed one.
  Collector two(s);
  for (int i = 1; i <= 98; ++i) two.record(completed(0, 0, i / 1000.0));
  two.record(failed(0, 0));
  two.record(failed(0, 0, Outcome::kUnfinished));
  EXPECT_TRUE(std::isinf(two.summarize("hybrid", {}).classes[0].ttft_p99_failed_ms));

  // 99 served, 1 failed, 5 superseded (not answered): rank 99 is served.
  Collector one(s);
  for (int i = 1; i <= 99; ++i) one.record(completed(0, 0, i / 1000.0));
  one.record(failed(0, 0, Outcome::kCancelled));
  for (int i = 0; i < 5; ++i) one.record(failed(0, 0, Outcome::kSuperseded));
  const GroupSummary g = one.summarize("hybrid", {}).classes[0];
  EXPECT_NEAR(g.ttft_p99_failed_ms, 99, 1e-3);
  EXPECT_NEAR(judged_p99(g), 99, 1e-3);

  Collector none(s);
  none.record(failed(0, 0, Outcome::kSuperseded));
  const GroupSummary empty = none.summarize("hybrid", {}).classes[0];
  EXPECT_TRUE(std::isnan(empty.ttft_p99_failed_ms));
  EXPECT_EQ(judged_p99(empty), 0);
}

// A randomised check of D3's P99 against its definition: sort everything
// answered, failures as +inf, take the nearest rank.
TEST(BenchYardstick, P99WithFailuresMatchesItsDefinitionOnRandomSamples) {
  const Scenario s = parsed(R"(
name: t
tenants: [{name: a}]
classes:
  - {name: chat, traffic: {}}
)");
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    Collector c(s);
    std::vector<double> answered;
    const int n = std::uniform_int_distribution<>(1, 400)(rng);
    const double fail_p = std::uniform_real_distribution<>(0, 0.03)(rng);
    for (int i = 0; i < n; ++i) {
      if (std::uniform_real_distribution<>(0, 1)(rng) < fail_p) {
        c.record(failed(0, 0));
        answered.push_back(INFINITY);
      } else {
        const double ms = std::uniform_int_distribution<>(1, 5000)(rng);
        c.record(completed(0, 0, ms / 1000));
        answered.push_back(ms);
      }
    }
    std::sort(answered.begin(), answered.end());
    const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n)));
    const double want = answered[rank - 1];
    const double got = c.summarize("hybrid", {}).classes[0].ttft_p99_failed_ms;
    if (std::isinf(want)) {
      EXPECT_TRUE(std::isinf(got)) << "round " << round;
    } else {
      EXPECT_NEAR(got, want, 1e-3) << "round " << round;
    }
  }
}

// D2: over 3x its weight's share among the class's busy tenants floods; its
// requests leave the class row and the whole, and it is reported apart. A
// stream joining a class (scheduler_class) counts for that class.
TEST(BenchYardstick, FlooderLeavesTheClassRowsAndIsSummarisedApart) {
  const Scenario s = parsed(R"(
name: t
duration_s: 10
tenants: [{name: a}, {name: b}, {name: c}, {name: d, weight: 3}, {name: idle}]
classes:
  - {name: chat, slo: {ttft_ms: 100}, tenants: {b: 1, c: 1, d: 1}, traffic: {}}
  - {name: chat-flood, scheduler_class: chat, tenants: {a: 1}, traffic: {}}
  - {name: batch, tenants: {a: 1}, traffic: {}}
)");
  Collector c(s);
  // chat: a sends 31 (31 of 40 requests = 0.775 > 3 x 1/6), b 3, c 3, d 3.
  for (int i = 0; i < 30; ++i) c.record(completed(1, 0, 0.5));
  c.record(failed(1, 0));
  for (uint16_t t = 1; t <= 3; ++t) {
    for (int i = 0; i < 3; ++i) c.record(completed(0, t, 0.01));
  }
  // batch: a alone, never flooding.
  for (int i = 0; i < 50; ++i) c.record(completed(2, 0, 1));
  const PolicySummary p = c.summarize("hybrid", {});
  ASSERT_EQ(p.flooders.size(), 1u);
  const FlooderSummary& f = p.flooders[0];
  EXPECT_EQ(f.klass, "chat");
  EXPECT_EQ(f.tenant, "a");
  EXPECT_DOUBLE_EQ(f.weight_share, 1.0 / 6.0);
  EXPECT_DOUBLE_EQ(f.demand_share, 31.0 / 40.0);
  EXPECT_EQ(f.answered, 31u);
  EXPECT_EQ(f.completed, 30u);
  EXPECT_EQ(f.others_answered, 9u);
  EXPECT_EQ(f.class_completed, 39u);
  EXPECT_EQ(p.classes[1].generated, 31u);       // the report's row keeps it
  EXPECT_EQ(p.fair_classes[1].generated, 0u);   // the yardstick's does not
  EXPECT_EQ(p.fair_classes[0].generated, 9u);
  EXPECT_EQ(p.fair_classes[2].generated, 50u);  // batch: a alone floods nothing
  EXPECT_EQ(p.fair_all.generated, 59u);
  EXPECT_EQ(p.all.generated, 90u);
  EXPECT_NEAR(p.fair_classes[0].ttft_p99_failed_ms, 10, 1e-3);
}

TEST(BenchYardstick, ExactlyThreeTimesTheWeightShareIsNotFlooding) {
  const Scenario s = parsed(R"(
name: t
tenants: [{name: a}, {name: b}, {name: c}, {name: d}, {name: e}, {name: f}]
classes:
  - {name: chat, traffic: {}}
)");
  Collector c(s);
  // a: 5 of 10 requests = 0.5 = 3 x 1/6.
  for (int i = 0; i < 5; ++i) c.record(completed(0, 0, 0.01));
  for (uint16_t t = 1; t <= 5; ++t) c.record(completed(0, t, 0.01));
  const PolicySummary p = c.summarize("hybrid", {});
  EXPECT_TRUE(p.flooders.empty());
  EXPECT_EQ(p.fair_all.generated, p.all.generated);
}

// Hand-made results: critical (top), chat, batch (background).
Scenario three_classes() {
  Scenario s;
  s.classes.resize(3);
  s.classes[0].name = "critical";
  s.classes[0].policy.engine_priority = 0;
  s.classes[0].slo.ttft_ms = 300;
  s.classes[1].name = "chat";
  s.classes[1].policy.engine_priority = 2;
  s.classes[1].slo.ttft_ms = 2000;
  s.classes[2].name = "batch";
  s.classes[2].policy.engine_priority = 10;
  s.classes[2].policy.background = true;
  return s;
}

GroupSummary group(double p99, uint64_t answered, uint64_t dropped, double goodput = 1) {
  GroupSummary g;
  g.generated = answered;
  g.outcomes[static_cast<std::size_t>(Outcome::kCompleted)] = answered - dropped;
  g.outcomes[static_cast<std::size_t>(Outcome::kDropped)] = dropped;
  g.ttft_p99_failed_ms = p99;
  g.goodput_rps = goodput;
  return g;
}

PolicySummary policy(std::string name, double goodput) {
  PolicySummary p;
  p.policy = std::move(name);
  p.fair_all.goodput_rps = goodput;
  p.fair_all.good_share = 0.5;
  p.fair_classes = {group(100, 1000, 0), group(1000, 1000, 0), group(5000, 1000, 0)};
  return p;
}

struct Runs {
  RunResults r;
  Runs() {
    for (const char* name : {"fifo", "priority", "hybrid"}) r.policies.push_back(policy(name, 10));
  }
  PolicySummary& operator[](std::size_t i) { return r.policies[i]; }
};

std::vector<Regret> losing(const Scenario& s, const RunResults& r) { return combine({judge(s, r)}); }

bool has(const std::vector<Regret>& regrets, std::string_view figure) {
  for (const Regret& g : regrets) {
    if (g.figure == figure) return true;
  }
  return false;
}

TEST(BenchYardstick, IdenticalRunsLoseNothing) {
  Runs runs;
  EXPECT_FALSE(judge(three_classes(), runs.r).empty());
  EXPECT_TRUE(losing(three_classes(), runs.r).empty());
  runs.r.policies.erase(runs.r.policies.begin());
  EXPECT_TRUE(judge(three_classes(), runs.r).empty());  // no fifo: nothing to compare
}

// D4: within its SLO with at most 1% failed, a class loses nothing, however
// much better a baseline does; past it, or failing more, it is compared.
TEST(BenchYardstick, SlackWithinTheSloIsFree) {
  const Scenario s = three_classes();
  Runs runs;
  runs[2].fair_classes[1] = group(1900, 1000, 10);  // 4x the baselines' P99, 1% failed, within 2 s
  EXPECT_TRUE(losing(s, runs.r).empty());
  runs[2].fair_classes[1] = group(2100, 1000, 0);  // past the SLO and 1.2x + 20 ms
  EXPECT_TRUE(has(losing(s, runs.r), "chat: TTFT P99 ms"));
  runs[2].fair_classes[1] = group(1000, 1000, 11);  // 1.1% failed: no longer free, over 1 point
  EXPECT_TRUE(has(losing(s, runs.r), "chat: failed share"));
  // The top class: free on latency within its SLO, never on failures.
  runs[2].fair_classes[1] = group(1000, 1000, 0);
  runs[2].fair_classes[0] = group(290, 1000, 1);
  const auto r = losing(s, runs.r);
  EXPECT_FALSE(has(r, "critical: TTFT P99 ms"));
  EXPECT_FALSE(has(r, "critical: failed share"));  // 0.1% = priority's + 0.1 point
  runs[2].fair_classes[0] = group(290, 1000, 2);
  EXPECT_TRUE(has(losing(s, runs.r), "critical: failed share"));
}

// The tolerances: one run's noise passes, more does not.
TEST(BenchYardstick, TolerancesAreTheNoiseOfOneRun) {
  const Scenario s = three_classes();
  Runs runs;
  runs[2].fair_classes[1] = group(2180, 1000, 0);
  runs[0].fair_classes[1] = group(1800, 1000, 0);
  runs[1].fair_classes[1] = group(1700, 1000, 0);
  EXPECT_TRUE(losing(s, runs.r).empty());  // 1.2 x 1800 + 20 = 2180
  runs[2].fair_classes[1] = group(2181, 1000, 0);
  EXPECT_TRUE(has(losing(s, runs.r), "chat: TTFT P99 ms"));
  // Failed share: 1.1x the worse baseline's + 1 point.
  runs[2].fair_classes[1] = group(1000, 1000, 320);
  runs[0].fair_classes[1] = group(1000, 1000, 200);
  runs[1].fair_classes[1] = group(1000, 1000, 100);
  EXPECT_TRUE(has(losing(s, runs.r), "chat: failed share"));  // 32% > 1.1 x 20% + 1 = 23%
  runs[2].fair_classes[1] = group(1000, 1000, 229);
  EXPECT_FALSE(has(losing(s, runs.r), "chat: failed share"));
}

// A P99 that is a failure loses with the failed share, not on its own: 1.2%
// failed against 0.9% is within the failed share's tolerance, however
// +inf compares with a served time.
TEST(BenchYardstick, AFailedP99LosesOnlyWithTheFailedShare) {
  const Scenario s = three_classes();
  Runs runs;
  runs[2].fair_classes[1] = group(INFINITY, 1000, 12);
  runs[0].fair_classes[1] = group(2500, 1000, 9);
  runs[1].fair_classes[1] = group(2500, 1000, 9);
  EXPECT_TRUE(losing(s, runs.r).empty());
  runs[2].fair_classes[1] = group(INFINITY, 1000, 30);  // 3% > 1.1 x 0.9% + 1 point
  const auto r = losing(s, runs.r);
  EXPECT_TRUE(has(r, "chat: TTFT P99 ms"));
  EXPECT_TRUE(has(r, "chat: failed share"));
}

// D8: the top class's P99 is held to priority's only where priority keeps
// the SLO.
TEST(BenchYardstick, TopClassP99AgainstPriorityOnlyWherePriorityMeetsTheSlo) {
  const Scenario s = three_classes();
  Runs runs;
  runs[2].fair_classes[0] = group(400, 1000, 0);  // past 300 ms, priority at 100 ms
  EXPECT_TRUE(has(losing(s, runs.r), "critical: TTFT P99 ms"));
  runs[1].fair_classes[0] = group(350, 1000, 0);  // priority past its SLO too
  EXPECT_FALSE(has(losing(s, runs.r), "critical: TTFT P99 ms"));
  runs[2].fair_classes[0] = group(INFINITY, 1000, 20);  // 2% failed
  EXPECT_TRUE(has(losing(s, runs.r), "critical: failed share"));
}

// D5: losing goodput to fifo counts only where fifo keeps the top class.
TEST(BenchYardstick, GoodputAgainstFifoCountsOnlyWhereFifoKeepsTheTopClass) {
  const Scenario s = three_classes();
  Runs runs;
  runs[0].fair_all.goodput_rps = 12;                 // fifo: +20% overall
  runs[0].fair_classes[0] = group(100, 1000, 0, 0.5);  // by starving the top class
  EXPECT_TRUE(losing(s, runs.r).empty());
  runs[0].fair_classes[0] = group(100, 1000, 0, 0.96);  // keeping it
  EXPECT_TRUE(has(losing(s, runs.r), "goodput req/s against fifo"));
  runs[0].fair_all.goodput_rps = 10;
  runs[1].fair_all.goodput_rps = 11.5;  // priority: always a loss, past 95% less the noise
  EXPECT_TRUE(has(losing(s, runs.r), "goodput req/s against priority"));
  runs[1].fair_all.goodput_rps = 10;
  // Direct: only where it meets its SLOs.
  PolicySummary direct = policy("direct", 11.5);
  direct.fair_all.good_share = 0.9;
  runs.r.policies.push_back(direct);
  EXPECT_TRUE(losing(s, runs.r).empty());
  runs.r.policies.back().fair_all.good_share = 0.96;
  EXPECT_TRUE(has(losing(s, runs.r), "goodput req/s against direct"));
}

// D2: a flooder is owed 90% of min(its demand, max(its weight's share of
// the best service any policy gave the class, what the others left)).
TEST(BenchYardstick, FlooderIsOwedItsShareAndWhatTheOthersLeave) {
  const Scenario s = three_classes();
  Runs runs;
  const FlooderSummary base{.klass = "chat", .tenant = "a", .weight_share = 0.25, .demand_share = 0.9,
                            .answered = 900, .completed = 0, .others_answered = 100, .class_completed = 600};
  for (std::size_t p = 0; p < 3; ++p) runs[p].flooders.push_back(base);
  runs[0].flooders[0].class_completed = 5000;  // fifo's service does not count
  runs[1].flooders[0].class_completed = 800;   // priority served the class the most
  // Others asked 100 of 800 served: 700 left, 0.9 x 700 = 630 owed.
  runs[2].flooders[0].completed = 629;
  auto r = judge(s, runs.r);
  ASSERT_EQ(r.back().figure, "flooder a in chat: served requests");
  EXPECT_DOUBLE_EQ(r.back().bound, 630);
  EXPECT_TRUE(r.back().loses);
  runs[2].flooders[0].completed = 630;
  EXPECT_FALSE(judge(s, runs.r).back().loses);
  // With the others asking for all of it, the weight's share: 0.9 x 200.
  for (std::size_t p = 0; p < 3; ++p) runs[p].flooders[0].others_answered = 5000;
  EXPECT_DOUBLE_EQ(judge(s, runs.r).back().bound, 180);
  // Never more than it asked for.
  for (std::size_t p = 0; p < 3; ++p) {
    runs[p].flooders[0].others_answered = 0;
    runs[p].flooders[0].answered = 100;
  }
  EXPECT_DOUBLE_EQ(judge(s, runs.r).back().bound, 90);
}

// D1: a majority of the runs and the medians.
TEST(BenchYardstick, ALossMustRepeatAndHoldOnTheMedian) {
  const auto run = [](double value, double bound) {
    return std::vector<Check>{{"x", value, bound, false, value > bound}};
  };
  EXPECT_EQ(combine({run(100, 90), run(100, 90), run(10, 200)}).size(), 1u);
  EXPECT_TRUE(combine({run(100, 90), run(10, 90), run(10, 200)}).empty());  // once only
  // Two runs lose by a hair, the third by nothing: the medians (100 against
  // 100) do not lose.
  EXPECT_TRUE(combine({run(100, 99), run(101, 100), run(50, 200)}).empty());
  // A figure missing from a run does not lose there.
  EXPECT_TRUE(combine({run(100, 90), {}, {}}).empty());
  EXPECT_EQ(combine({run(100, 90), run(100, 90), {}}).size(), 1u);
  // One run: it decides alone.
  EXPECT_EQ(combine({run(100, 90)}).size(), 1u);
  // An exempt run (D4) does not lose, but its values still make the medians.
  std::vector<Check> exempt = run(5000, 90);
  exempt[0].loses = false;
  EXPECT_TRUE(combine({run(100, 90), exempt, run(10, 90)}).empty());
  // Higher is better (goodput).
  const auto good = [](double value, double bound) {
    return std::vector<Check>{{"g", value, bound, true, value < bound}};
  };
  EXPECT_EQ(combine({good(9, 9.5), good(9, 9.5), good(10, 9.5)}).size(), 1u);
  EXPECT_TRUE(combine({good(9, 9.5), good(10, 9.5), good(10, 9.5)}).empty());
}

// The variant rule (noise floor, features): the same rules, hybrid against
// a variant of itself.
TEST(BenchYardstick, VariantIsJudgedAgainstItsReference) {
  const Scenario s = three_classes();
  Runs runs;
  runs.r.policies.push_back(policy("hybrid-tiebreak", 10));
  const auto all = [](const ClassSpec&) { return true; };
  EXPECT_TRUE(combine({judge_variant(s, runs.r, "hybrid-tiebreak", "hybrid", "tie-break", false, all)}).empty());
  runs.r.policies.back().fair_classes[1] = group(2500, 1000, 0);
  runs.r.policies.back().fair_all.goodput_rps = 8;
  const auto r = combine({judge_variant(s, runs.r, "hybrid-tiebreak", "hybrid", "tie-break", false, all)});
  EXPECT_TRUE(has(r, "tie-break: chat: TTFT P99 ms"));
  EXPECT_TRUE(has(r, "tie-break: goodput req/s"));
  // Latency only, for the classes the feature touches.
  const auto chat_only = [](const ClassSpec& c) { return c.name == "chat"; };
  const auto l = judge_variant(s, runs.r, "hybrid-tiebreak", "hybrid", "f", true, chat_only);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].figure, "f: chat: TTFT P99 ms");
  EXPECT_TRUE(judge_variant(s, runs.r, "missing", "hybrid", "f", true, chat_only).empty());
}

}  // namespace
}  // namespace arbiter::bench::bench_yardstick_test
