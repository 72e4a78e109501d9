// Virtual runs end to end: every generated request ends exactly once, the
// counts add up per class and tenant, percentiles are ordered, runs are
// deterministic, and the results file passes (and a broken one fails) the check.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "bench/report_json.hpp"
#include "bench/scenario_yaml.hpp"
#include "bench/virtual_run.hpp"
#include "bench/workload.hpp"

namespace arbiter::bench::bench_virtual_run_test {
namespace {

Scenario smoke() {
  auto s = load_scenario(ARBITER_SOURCE_DIR "/bench/scenarios/smoke.yaml");
  EXPECT_TRUE(s) << s.error();
  return *s;
}

uint64_t count(const GroupSummary& g, Outcome o) { return g.outcomes[static_cast<std::size_t>(o)]; }

void expect_ordered(const Percentiles& p, const std::string& what) {
  EXPECT_LE(p.p50, p.p90) << what;
  EXPECT_LE(p.p90, p.p99) << what;
  EXPECT_LE(p.p99, p.p999) << what;
}

TEST(BenchVirtualRun, PhasesCountTheRequestsThatArrivedInThem) {
  Scenario s = smoke();
  s.phases = {{.name = "first half", .from_s = 0, .to_s = s.duration_s / 2}};
  uint64_t first_half = 0, generated = 0;
  for (Workload w(s, s.seed); auto r = w.next();) {
    ++generated;
    first_half += r->arrival < s.duration_s / 2;
  }
  const PolicySummary p = run_virtual(s, "hybrid", s.seed);
  ASSERT_EQ(p.phases.size(), 1u);
  EXPECT_EQ(p.phases[0].all.generated, first_half);
  EXPECT_GT(first_half, 0u);
  EXPECT_LT(first_half, generated);
  uint64_t by_class = 0;
  for (const GroupSummary& g : p.phases[0].classes) by_class += g.generated;
  EXPECT_EQ(by_class, first_half);
  EXPECT_GT(p.jain_goodput, 0);
  EXPECT_LE(p.jain_goodput, 1.0 + 1e-9);
  // Tokens against the engines' full-step rate: above 0, below busy time's
  // share (an engine with a few sequences is busy but far from full).
  EXPECT_GT(p.token_load, 0);
  EXPECT_LT(p.token_load, p.utilisation);
}

TEST(BenchVirtualRun, BorrowingRunsOnTheLendersEnginesOnlyWhenItLends) {
  // The BRIEF's deployment, shortened: the completion pool lends its idle
  // engines to the chat pool, whose requests borrow them when their own
  // pool's wait would cost them their TTFT SLO.
  auto loaded = load_scenario(ARBITER_SOURCE_DIR "/bench/scenarios/completion-vs-chat-pools.yaml");
  ASSERT_TRUE(loaded) << loaded.error();
  Scenario s = *loaded;
  ASSERT_TRUE(s.pools[0].lend && s.pools[1].lend);
  const PolicySummary lending = run_virtual(s, "hybrid", s.seed);
  EXPECT_GT(lending.engine.borrowed_dispatches, 0u);
  EXPECT_LT(lending.engine.borrowed_dispatches, lending.engine.dispatches);
  const PolicySummary plain = run_virtual(s, "hybrid-no-borrowing", s.seed);
  EXPECT_EQ(plain.engine.borrowed_dispatches, 0u);
  s.pools[0].lend = s.pools[1].lend = false;
  EXPECT_EQ(run_virtual(s, "hybrid", s.seed).engine.borrowed_dispatches, 0u);
  // Nothing is lost either way.
  for (const PolicySummary* p : {&lending, &plain}) {
    EXPECT_EQ(p->all.generated, lending.all.generated);
    EXPECT_EQ(count(p->all, Outcome::kUnfinished), 0u);
  }
}

// Adaptive capacity (core/adaptive_capacity.hpp) in virtual mode: the
// sweep's scenario 176 (seed 1), one chat class on 2 engines of 32 slots,
// where a fixed limit held every gateway policy to a fifth of direct's
// goodput. The slots the controller adds above the start are background
// work's only: the chat class keeps the fixed limit, while background work
// on the same engines fills more than 32 sequences per engine, up to
// max_extra_share of the start above it.
Scenario one_chat_class_on_small_slots() {
  auto s = parse_scenario(R"(name: adaptive
seed: 1176
duration_s: 60
drain_s: 120
engine: {profile: llama-8b-a100, count: 2, max_concurrency: 32}
policies: [hybrid]
tenants:
  - {name: t0}
classes:
  - name: chat
    slo: {ttft_ms: 2000, tpot_ms: 200}
    traffic: {kind: requests, prompt: {dist: lognormal, mean: 2018, sigma: 0.5, max: 8000}, output: {dist: uniform, min: 78, max: 235}, max_tokens: 1024, prefix: {count: 4, tokens: 400, share: 1}, patience: {share: 1, after_s: 38.94}, rate: 9.602}
)");
  EXPECT_TRUE(s) << s.error();
  return *s;
}

Scenario one_background_class_on_small_slots() {
  auto s = parse_scenario(R"(name: adaptive-background
seed: 1176
duration_s: 60
drain_s: 300
engine: {profile: llama-8b-a100, count: 2, max_concurrency: 32}
policies: [hybrid]
tenants:
  - {name: t0}
classes:
  - name: batch
    traffic: {kind: requests, rate: 20, prompt: {dist: uniform, min: 100, max: 300}, output: {dist: uniform, min: 200, max: 400}, max_tokens: 512, deadline_s: 600}
)");
  EXPECT_TRUE(s) << s.error();
  return *s;
}

double most_running(const PolicySummary& p) {
  double most = 0;
  for (const Sample& x : p.series) most = std::max(most, x.running);
  return most;
}

// Issue 41: with adaptive capacity every class's slots follow the engine
// past a fixed max_concurrency (a chat class alone: the sweep's scenario
// 176, below direct clients with 32 fixed slots); slots above that for
// background work only take max_extra_share.
TEST(BenchVirtualRun, AdaptiveCapacityGrowsPastAFixedLimit) {
  Scenario chat = one_chat_class_on_small_slots();
  EXPECT_LE(most_running(run_virtual(chat, "hybrid", chat.seed)), 64);
  chat.engine.adaptive.enabled = true;
  EXPECT_GT(most_running(run_virtual(chat, "hybrid", chat.seed)), 64);
  Scenario s = one_background_class_on_small_slots();
  s.engine.adaptive.enabled = false;
  EXPECT_LE(most_running(run_virtual(s, "hybrid", s.seed)), 64);
  s.engine.adaptive.enabled = true;
  s.engine.adaptive.max_extra_share = 0.25;
  const PolicySummary adaptive = run_virtual(s, "hybrid", s.seed);
  EXPECT_GT(most_running(adaptive), 64);
  EXPECT_LE(most_running(adaptive), 80);  // 32 x (1 + max_extra_share 0.25) per engine
  EXPECT_EQ(count(adaptive.all, Outcome::kUnfinished), 0u);
}

// A scenario's tenants[].max_running / max_share are the gateway's tenant
// caps: the tenant's requests hold at most that many of the pool's slots
// (here the pool's only tenant, on 64 slots it would otherwise fill).
TEST(BenchVirtualRun, TenantCapsBoundWhatATenantRuns) {
  Scenario s = one_chat_class_on_small_slots();
  const PolicySummary open = run_virtual(s, "hybrid", s.seed);
  EXPECT_GT(most_running(open), 20);
  s.tenants[0].max_running = 12;
  const PolicySummary by_count = run_virtual(s, "hybrid", s.seed);
  EXPECT_LE(most_running(by_count), 12);
  EXPECT_GT(most_running(by_count), 6);
  s.tenants[0].max_running = 0;
  s.tenants[0].max_share = 0.125;  // of 64 slots: 8
  const PolicySummary by_share = run_virtual(s, "hybrid", s.seed);
  EXPECT_LE(most_running(by_share), 8);
  EXPECT_EQ(count(by_share.all, Outcome::kUnfinished), 0u);
}

TEST(BenchVirtualRun, CountsAddUpForEveryPolicy) {
  const Scenario s = smoke();
  uint64_t generated = 0;
  for (Workload w(s, s.seed); w.next();) ++generated;
  for (const char* policy : {"direct", "fifo", "priority", "hybrid"}) {
    const PolicySummary p = run_virtual(s, policy, s.seed);
    EXPECT_EQ(p.all.generated, generated) << policy;
    uint64_t sum = 0;
    for (std::size_t o = 0; o < kOutcomes; ++o) sum += p.all.outcomes[o];
    EXPECT_EQ(sum, generated) << policy;
    uint64_t by_class = 0, by_tenant = 0;
    for (const auto& g : p.classes) by_class += g.generated;
    for (const auto& g : p.tenants) by_tenant += g.generated;
    EXPECT_EQ(by_class, generated) << policy;
    EXPECT_EQ(by_tenant, generated) << policy;
    // The drain is long enough: nothing is cut, and the typing class supersedes.
    EXPECT_EQ(count(p.all, Outcome::kUnfinished), 0u) << policy;
    EXPECT_GT(count(p.classes[1], Outcome::kSuperseded), 0u) << policy;
    EXPECT_GT(count(p.all, Outcome::kCompleted), generated / 2) << policy;
    EXPECT_EQ(p.all.ttft_ms.count, count(p.all, Outcome::kCompleted)) << policy;
    for (const auto& g : p.classes) {
      expect_ordered(g.ttft_ms, std::string(policy) + " ttft " + g.name);
      expect_ordered(g.itl_ms, std::string(policy) + " itl " + g.name);
      expect_ordered(g.e2e_ms, std::string(policy) + " e2e " + g.name);
      EXPECT_LE(g.ttft_ms.p50, g.e2e_ms.p50) << policy << " " << g.name;
    }
    EXPECT_GT(p.engine.work_tokens, 0u);
    EXPECT_GT(p.utilisation, 0);
    EXPECT_LE(p.utilisation, 1.0);
    EXPECT_GT(p.waste_share, 0) << policy;  // superseded completions were aborted in flight
    EXPECT_LT(p.waste_share, 1) << policy;
    EXPECT_EQ(p.series.size(), 200u) << policy;
  }
}

// Typing through: keystrokes that type along the suggestion being generated
// keep the running generation when the class allows it; every request still
// ends exactly once, and less engine work is thrown away.
TEST(BenchVirtualRun, TypingThroughInheritsRunningGenerationsAndWastesLess) {
  const auto scenario = [](bool typing_through) {
    auto s = parse_scenario(std::string(R"(
name: t
seed: 4
duration_s: 30
drain_s: 60
engine: {profile: llama-8b-a100, count: 2}
classes:
  - name: completion
    slo: {ttft_ms: 200}
    traffic: {kind: typing, developers: 50, rate: 3, type_along: 0.8,
              output: {dist: uniform, min: 8, max: 64}}
)") + (typing_through ? "    scheduler: {typing_through: true}\n" : "    scheduler: {typing_through: false}\n"));
    EXPECT_TRUE(s) << s.error();
    return *s;
  };
  const Scenario on = scenario(true), off = scenario(false);
  uint64_t generated = 0;
  for (Workload w(on, on.seed); w.next();) ++generated;
  const PolicySummary through = run_virtual(on, "hybrid", on.seed);
  const PolicySummary aborting = run_virtual(off, "hybrid", off.seed);
  const PolicySummary direct = run_virtual(on, "direct", on.seed);
  for (const PolicySummary* p : {&through, &aborting, &direct}) {
    uint64_t sum = 0;
    for (std::size_t o = 0; o < kOutcomes; ++o) sum += p->all.outcomes[o];
    EXPECT_EQ(sum, generated) << p->policy;
    EXPECT_EQ(count(p->all, Outcome::kUnfinished), 0u) << p->policy;
    EXPECT_EQ(p->all.ttft_ms.count, count(p->all, Outcome::kCompleted)) << p->policy;
  }
  EXPECT_GT(through.engine.typed_through, 50u);
  EXPECT_EQ(aborting.engine.typed_through, 0u);
  EXPECT_EQ(direct.engine.typed_through, 0u);  // no peer does this
  // The same keystrokes; an heir has part of its answer already, so it
  // finishes sooner and more keystrokes find their predecessor done.
  EXPECT_LT(count(through.all, Outcome::kSuperseded), count(aborting.all, Outcome::kSuperseded));
  EXPECT_LT(through.waste_share, 0.8 * aborting.waste_share);
  EXPECT_LT(through.engine.work_tokens, aborting.engine.work_tokens);
}

TEST(BenchVirtualRun, SameSeedSameResultOtherSeedOtherResult) {
  const Scenario s = smoke();
  const PolicySummary a = run_virtual(s, "hybrid", 3);
  const PolicySummary b = run_virtual(s, "hybrid", 3);
  const PolicySummary c = run_virtual(s, "hybrid", 4);
  EXPECT_EQ(a.all.outcomes, b.all.outcomes);
  EXPECT_EQ(a.all.ttft_ms.p99, b.all.ttft_ms.p99);
  EXPECT_EQ(a.engine.work_tokens, b.engine.work_tokens);
  EXPECT_NE(a.engine.work_tokens, c.engine.work_tokens);
}

// A tiny queue and short deadlines under overload: the gateway rejects and
// expires, direct does neither; every request still ends exactly once.
TEST(BenchVirtualRun, OverloadRejectsAndExpiresButLosesNothing) {
  auto s = parse_scenario(R"(
name: overload
duration_s: 3
drain_s: 60
engine: {profile: tiny, count: 1, max_concurrency: 2}
classes:
  - name: chat
    scheduler: {max_queue: 20, max_queue_wait_ms: 300}
    traffic: {kind: requests, rate: 200, prompt: 500, output: 50, max_tokens: 64,
              patience: {share: 0.3, after_s: 0.2}}
)");
  ASSERT_TRUE(s) << s.error();
  const PolicySummary gw = run_virtual(*s, "fifo", 1);
  EXPECT_GT(count(gw.all, Outcome::kRejected), 0u);
  EXPECT_GT(count(gw.all, Outcome::kDropped), 0u);
  EXPECT_GT(count(gw.all, Outcome::kCancelled), 0u);
  const PolicySummary direct = run_virtual(*s, "direct", 1);
  EXPECT_EQ(count(direct.all, Outcome::kRejected), 0u);
  EXPECT_EQ(count(direct.all, Outcome::kDropped), 0u);
  for (const PolicySummary* p : {&gw, &direct}) {
    uint64_t sum = 0;
    for (std::size_t o = 0; o < kOutcomes; ++o) sum += p->all.outcomes[o];
    EXPECT_EQ(sum, p->all.generated);
  }
}

// Background work holding every slot is preempted for waiting interactive
// work and resumed later; every job still delivers all its tokens.
TEST(BenchVirtualRun, PreemptedWorkResumesAndCompletes) {
  auto s = parse_scenario(R"(
name: preempt
duration_s: 2
drain_s: 120
engine: {profile: tiny, count: 1, max_concurrency: 4, signals: false}
scheduler: {preempt_after_ms: 0}  # preempt at once: this is about resuming
classes:
  - {name: chat, traffic: {kind: requests, rate: 20, prompt: 100, output: 20, max_tokens: 32}}
  - {name: batch, traffic: {kind: backlog, jobs: 8, prompt: 200, output: 400, max_tokens: 512}}
)");
  ASSERT_TRUE(s) << s.error();
  const PolicySummary on = run_virtual(*s, "hybrid", 1);
  const PolicySummary off = run_virtual(*s, kHybridNoPreemption, 1);
  EXPECT_GT(on.engine.gateway_preemptions, 0u);
  EXPECT_GT(on.engine.wasted_preempt_tokens, 0u);
  EXPECT_EQ(off.engine.gateway_preemptions, 0u);
  for (const PolicySummary* p : {&on, &off}) {
    EXPECT_EQ(count(p->classes[1], Outcome::kCompleted), 8u);
    EXPECT_EQ(count(p->all, Outcome::kCompleted), p->all.generated);
  }
  // Preemption costs the batch time, not completion.
  EXPECT_GE(on.classes[1].e2e_ms.p50, off.classes[1].e2e_ms.p50);
}

// A run cut short by drain_s reports the rest as unfinished, not lost.
TEST(BenchVirtualRun, CutRunReportsUnfinished) {
  auto s = parse_scenario(R"(
name: cut
duration_s: 1
drain_s: 0.5
engine: {profile: tiny, count: 1}
classes:
  - {name: batch, traffic: {kind: backlog, jobs: 50, prompt: 100, output: 2000, max_tokens: 2048}}
)");
  ASSERT_TRUE(s) << s.error();
  const PolicySummary p = run_virtual(*s, "hybrid", 1);
  EXPECT_EQ(p.all.generated, 50u);
  EXPECT_EQ(count(p.all, Outcome::kUnfinished), 50u);
}

TEST(BenchVirtualRun, ResultsFilePassesTheCheckAndACorruptedOneFails) {
  const Scenario s = smoke();
  RunResults results;
  results.info.seed = s.seed;
  for (const char* policy : {"direct", "hybrid"})
    results.policies.push_back(run_virtual(s, policy, s.seed));
  const auto dir = std::filesystem::temp_directory_path() / "arbiter_bench_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "results.json").string();
  ASSERT_TRUE(write_results_json(path, s, results));
  EXPECT_TRUE(check_results_json(path).empty());

  results.policies[1].classes[0].outcomes[0] += 1;  // one request counted twice
  results.policies[1].classes[1].ttft_ms.p90 = results.policies[1].classes[1].ttft_ms.p99 + 1;
  ASSERT_TRUE(write_results_json(path, s, results));
  const auto problems = check_results_json(path);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("hybrid.classes.critical: outcomes add up"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("hybrid.classes.completion.ttft_ms: percentiles not ordered"),
            std::string::npos)
      << problems[1];
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace arbiter::bench::bench_virtual_run_test
