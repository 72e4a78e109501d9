// Scenario files: defaults, overrides and errors that name their key path.
#include <gtest/gtest.h>

#include <filesystem>

#include "bench/scenario_yaml.hpp"
#include "bench/virtual_run.hpp"
#include "core/config.hpp"

namespace arbiter::bench {
namespace {

constexpr const char* kMinimal = R"(
name: t
classes:
  - name: chat
    traffic: {kind: requests, rate: 5}
)";

TEST(BenchScenario, MinimalUsesCoreClassDefaults) {
  auto s = parse_scenario(kMinimal);
  ASSERT_TRUE(s) << s.error();
  ASSERT_EQ(s->classes.size(), 1u);
  EXPECT_EQ(s->classes[0].policy.name, "chat");
  EXPECT_DOUBLE_EQ(s->classes[0].policy.max_share, 0.7);  // core/config.cpp's chat class
  EXPECT_EQ(s->engine.profile, "llama-8b-a100");
  EXPECT_EQ(s->engine.max_concurrency, 64u);
  ASSERT_EQ(s->tenants.size(), 1u);
  EXPECT_EQ(s->classes[0].tenant_mix, std::vector<double>{1.0});
  EXPECT_EQ(s->policies, (std::vector<std::string>{"direct", "fifo", "priority", "hybrid"}));
  EXPECT_EQ(s->scheduler.preemption, sched::SchedulerTunables{}.preemption);  // the gateway's default
}

TEST(BenchScenario, AStreamJoinsAnEarlierClassAndPhasesAreRead) {
  auto s = parse_scenario(R"(
name: t
tenants: [{name: a}, {name: b}]
phases: [{name: surge, from_s: 10, to_s: 20}]
classes:
  - name: chat
    tenants: {a: 1}
    traffic: {kind: requests, rate: 5}
  - name: critical
    traffic: {kind: requests, rate: 1}
  - name: chat-flood
    scheduler_class: chat
    tenants: {b: 1}
    traffic: {kind: requests, rate: 50}
)");
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(scheduler_classes(*s), (std::vector<uint16_t>{0, 1, 0}));
  EXPECT_EQ(scheduler_class_names(*s), (std::vector<std::string>{"chat", "critical"}));
  EXPECT_DOUBLE_EQ(s->classes[2].policy.max_share, 0.7);  // chat's policy
  ASSERT_EQ(s->phases.size(), 1u);
  EXPECT_EQ(s->phases[0].name, "surge");
  EXPECT_DOUBLE_EQ(s->phases[0].to_s, 20);

  const auto bad = parse_scenario(R"(
name: t
phases: [{name: p, from_s: 5, to_s: 5}]
classes:
  - name: flood
    scheduler_class: chat
    scheduler: {weight: 2}
    traffic: {kind: requests, rate: 5}
  - name: flood
    traffic: {kind: requests, rate: 5}
)");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("classes[0].scheduler_class: names no earlier class of its own"), std::string::npos);
  EXPECT_NE(bad.error().find("classes[0].scheduler: is the class's: set it there"), std::string::npos);
  EXPECT_NE(bad.error().find("classes[1].name: is used twice"), std::string::npos);
  EXPECT_NE(bad.error().find("phases[0].to_s: must be after from_s"), std::string::npos);
}

// Adaptive capacity's gap target per scheduler class (its tpot_slo): a tpot_ms as given,
// an e2e_ms less the ttft_ms spread over max_tokens, none without either;
// a joining stream's tighter bound applies to its class.
TEST(BenchScenario, ClassGapBoundsComeFromTheSlos) {
  auto s = parse_scenario(R"(
name: t
tenants: [{name: a}]
classes:
  - name: critical
    slo: {ttft_ms: 300, e2e_ms: 1000}
    traffic: {kind: requests, rate: 1, max_tokens: 16}
  - name: chat
    slo: {ttft_ms: 2000, tpot_ms: 200}
    traffic: {kind: requests, rate: 1}
  - name: completion
    slo: {ttft_ms: 200}
    traffic: {kind: requests, rate: 1}
  - name: chat-fast
    scheduler_class: chat
    slo: {tpot_ms: 50}
    traffic: {kind: requests, rate: 1}
)");
  ASSERT_TRUE(s) << s.error();
  const std::vector<double> bounds = class_gap_bounds_s(*s);
  ASSERT_EQ(bounds.size(), 3u);
  EXPECT_DOUBLE_EQ(bounds[0], 0.7 / 16);
  EXPECT_DOUBLE_EQ(bounds[1], 0.05);
  EXPECT_DOUBLE_EQ(bounds[2], 0);
  // The scheduler's classes carry them as their tpot_slo (what the gateway
  // config arbiter-bench writes declares), the joining stream too.
  using std::chrono::microseconds;
  EXPECT_EQ(s->classes[0].policy.tpot_slo, microseconds(43'750));
  EXPECT_EQ(s->classes[1].policy.tpot_slo, microseconds(50'000));
  EXPECT_EQ(s->classes[2].policy.tpot_slo, sched::Duration::zero());
  EXPECT_EQ(s->classes[3].policy.tpot_slo, microseconds(50'000));
  // Set by the SLO only, as ttft_slo_ms is.
  auto own = parse_scenario(R"(
name: t
tenants: [{name: a}]
classes:
  - {name: chat, scheduler: {tpot_slo_ms: 5}, traffic: {kind: requests, rate: 1}}
)");
  ASSERT_FALSE(own);
  EXPECT_NE(own.error().find("tpot_slo_ms"), std::string::npos) << own.error();
}

TEST(BenchScenario, PoolsSplitTheEnginesByClass) {
  const std::string head = R"(
name: t
engine: {count: 8}
classes:
  - {name: completion, traffic: {kind: requests, rate: 1}}
  - {name: chat, traffic: {kind: requests, rate: 1}}
  - {name: batch, traffic: {kind: requests, rate: 1}}
)";
  auto s = parse_scenario(head + "pools: [{classes: [completion], engines: 2}, {engines: 6}]\n");
  ASSERT_TRUE(s) << s.error();
  const PoolLayout layout = pool_layout(*s);
  EXPECT_EQ(layout.first, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(layout.count, (std::vector<uint32_t>{2, 6}));
  EXPECT_EQ(layout.pool_of_class, (std::vector<uint32_t>{0, 1, 1}));  // chat and batch: the rest
  EXPECT_FALSE(s->pools[0].lend);  // lending is asked for
  EXPECT_TRUE(parse_scenario(head + "pools: [{classes: [completion], engines: 2, lend: true}, {engines: 6}]\n")
                  ->pools[0]
                  .lend);
  // Without pools: one pool of every engine.
  EXPECT_EQ(pool_layout(*parse_scenario(head)).count, std::vector<uint32_t>{8});

  const auto error_of = [&](const std::string& pools) {
    auto bad = parse_scenario(head + pools);
    return bad ? std::string() : bad.error();
  };
  EXPECT_NE(error_of("pools: [{classes: [completion], engines: 2}, {engines: 5}]\n").find("add up to 7"),
            std::string::npos);
  EXPECT_NE(error_of("pools: [{classes: [nope], engines: 2}, {engines: 6}]\n").find("names no class"),
            std::string::npos);
  EXPECT_NE(error_of("pools: [{classes: [chat], engines: 2}, {classes: [chat], engines: 6}]\n").find("in two pools"),
            std::string::npos);
  EXPECT_NE(error_of("pools: [{classes: [completion], engines: 2}, {classes: [chat], engines: 6}]\n")
                .find("some class is in no pool"),
            std::string::npos);
}

TEST(BenchScenario, AKeyGivenTwiceIsAnError) {
  auto s = parse_scenario(R"(
name: t
duration_s: 10
duration_s: 20
classes:
  - {name: chat, traffic: {kind: requests, rate: 1}}
)");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("duration_s: given twice"), std::string::npos) << s.error();
}

TEST(BenchScenario, OverridesAndTrafficKinds) {
  auto s = parse_scenario(R"(
name: t
engine: {profile: tiny, count: 3, max_concurrency: 8, priority_scheduling: true}
tenants: [{name: a, weight: 2, max_running: 7}, {name: b, max_share: 0.25}]
classes:
  - name: completion
    scheduler: {debounce_ms: 100, min_share: 0.2}
    slo: {ttft_ms: 150}
    tenants: {b: 1}
    traffic: {kind: typing, developers: 5, rate: 2, keystrokes: 3, output: {dist: uniform, min: 4, max: 9}}
  - name: batch
    traffic: {kind: backlog, jobs: 10, deadline_s: 30, arrival: gamma, burstiness: 0.5,
              rate_changes: [{at_s: 5, for_s: 2, factor: 3}], day: {period_s: 60}}
)");
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->engine.count, 3u);
  EXPECT_EQ(s->engine.config.policy, engine::SchedulingPolicy::kPriority);
  const ClassSpec& c = s->classes[0];
  EXPECT_EQ(c.policy.debounce, std::chrono::milliseconds(100));
  EXPECT_DOUBLE_EQ(c.policy.min_share, 0.2);
  EXPECT_DOUBLE_EQ(c.policy.weight, 2);  // the core default survives the override
  EXPECT_EQ(c.tenant_mix, (std::vector<double>{0, 1}));
  EXPECT_EQ(s->tenants[0].max_running, 7u);
  EXPECT_DOUBLE_EQ(s->tenants[1].max_share, 0.25);
  const sched::SchedulerConfig sc = scheduler_config(*s, sched::Policy::kHybrid);
  EXPECT_EQ(sc.tenant_max_running.at(0), 7u);
  EXPECT_FALSE(sc.tenant_max_running.contains(1));
  EXPECT_DOUBLE_EQ(sc.tenant_max_share.at(1), 0.25);
  EXPECT_EQ(c.traffic.kind, TrafficKind::kTyping);
  EXPECT_EQ(c.traffic.max_tokens, 128u);  // typing default: the completion cap
  EXPECT_EQ(c.traffic.output.kind, LengthDist::Kind::kUniform);
  const TrafficSpec& b = s->classes[1].traffic;
  EXPECT_EQ(b.kind, TrafficKind::kBacklog);
  EXPECT_TRUE(b.arrival.gamma);
  ASSERT_EQ(b.rate.changes.size(), 1u);
  EXPECT_DOUBLE_EQ(*b.rate.changes[0].for_s, 2);
  ASSERT_TRUE(b.rate.day);
  EXPECT_TRUE(s->classes[1].policy.background);
}

// Each bad document yields an error starting with the offending key's path.
TEST(BenchScenario, ErrorsNameTheKeyPath) {
  const std::pair<const char*, const char*> cases[] = {
      {"name: t\nbogus: 1\nclasses: [{name: a, traffic: {rate: 1}}]", "bogus: unknown key"},
      {"name: t\nclasses: [{name: a, traffic: {rate: 1, colour: red}}]",
       "classes[0].traffic.colour: unknown key"},
      {"name: t\ntenants: [{name: a, max_share: 1.5}]\nclasses: [{name: a, traffic: {rate: 1}}]",
       "tenants[0].max_share: must be between"},
      {"name: t\nclasses: [{name: a, traffic: {rate: fast}}]",
       "classes[0].traffic.rate: must be a number"},
      {"name: t\nclasses: [{name: a, traffic: {rate: -1}}]",
       "classes[0].traffic.rate: must be between"},
      {"name: t\nclasses: [{name: a, traffic: {kind: stream}}]",
       "classes[0].traffic.kind: must be"},
      {"name: t\nclasses: [{name: a, traffic: {prompt: {dist: zipf}}}]",
       "classes[0].traffic.prompt.dist: must be"},
      {"name: t\nclasses: [{name: a, traffic: {burstiness: 2}}]",
       "classes[0].traffic.burstiness: needs arrival: gamma"},
      {"name: t\nclasses: [{name: a, tenants: {nobody: 1}, traffic: {}}]",
       "classes[0].tenants.nobody: no such tenant"},
      {"name: t\nengine: {profile: gpt-9}\nclasses: [{name: a, traffic: {}}]",
       "engine.profile: unknown profile"},
      {"name: t\nclasses: [{name: a, scheduler: {min_share: 2}, traffic: {}}]",
       "classes[0].scheduler.min_share: must be between"},
      {"name: t\nclasses: [{name: a, traffic: {rate_changes: [{at_s: 1, factr: 2}]}}]",
       "classes[0].traffic.rate_changes[0].factr: unknown key"},
      {"name: t\npolicies: [direct, lottery]\nclasses: [{name: a, traffic: {}}]",
       "policies[1]: must be"},
      {"name: t\nclasses: []", "classes: must be a non-empty list"},
      {"classes: [{name: a, traffic: {}}]", "name: is required"},
      {"name: t\nclasses: [{name: a}]", "classes[0].traffic: is required"},
      {"name: [t", "invalid YAML"},
  };
  for (const auto& [yaml, expected] : cases) {
    auto s = parse_scenario(yaml);
    ASSERT_FALSE(s) << yaml;
    EXPECT_NE(s.error().find(expected), std::string::npos) << "got: " << s.error();
  }
}

TEST(BenchScenario, SchedulerValidationIsReported) {
  auto s = parse_scenario(R"(
name: t
classes:
  - {name: a, scheduler: {min_share: 0.6}, traffic: {}}
  - {name: b, scheduler: {min_share: 0.6}, traffic: {}}
)");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("classes:"), std::string::npos) << s.error();
}

// Every shipped scenario parses.
TEST(BenchScenario, ShippedScenariosParse) {
  int found = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(ARBITER_SOURCE_DIR "/bench/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    ++found;
    auto s = load_scenario(entry.path().string());
    ASSERT_TRUE(s) << s.error();
    EXPECT_FALSE(s->finding.empty()) << entry.path();
  }
  EXPECT_GE(found, 7);
}

}  // namespace
}  // namespace arbiter::bench
