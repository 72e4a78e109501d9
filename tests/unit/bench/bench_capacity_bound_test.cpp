// The capacity bound (bench/capacity_bound.hpp): what no schedule can avoid
// failing. Hand cases; against a schedule of the same fluid model (earliest
// deadline first: the bound never exceeds what it fails) on random
// instances; and against the simulator's own runs of the overload scenario,
// every policy failing and superseding at least, and answering good at most,
// what the bound says.
#include <gtest/gtest.h>

#include <algorithm>
#include <queue>
#include <random>

#include "bench/capacity_bound.hpp"
#include "bench/scenario_yaml.hpp"
#include "bench/virtual_run.hpp"

namespace arbiter::bench {
namespace {

std::vector<BoundRequest> same(int n, double arrival, double end, double cost) {
  return std::vector<BoundRequest>(static_cast<std::size_t>(n), {.arrival = arrival, .end = end, .cost_s = cost});
}

TEST(CapacityBound, WhatDoesNotFitAWindowFails) {
  EXPECT_EQ(min_failures(same(10, 0, 5, 1), 1, 1, 10), 5u);
  EXPECT_EQ(min_failures(same(10, 0, 5, 1), 2, 1, 10), 0u);
  // Two crowded windows apart: their shortfalls add up.
  auto both = same(10, 0, 5, 1);
  const auto later = same(8, 10, 15, 1);
  both.insert(both.end(), later.begin(), later.end());
  EXPECT_EQ(min_failures(both, 1, 1, 30), 8u);
  // Cheapest first: of 3, 1, 1, 1 in 4 s, one fails.
  std::vector<BoundRequest> mixed = same(3, 0, 4, 1);
  mixed.push_back({.arrival = 0, .end = 4, .cost_s = 3});
  EXPECT_EQ(min_failures(mixed, 1, 1, 10), 1u);
  // An empty window fails; a window longer than any interval forces nothing.
  EXPECT_EQ(min_failures(same(3, 2, 2, 0.1), 1, 1, 10), 3u);
  EXPECT_EQ(min_failures(same(5, 0, 1000, 100), 1, 1, 120), 0u);
}

// Failures of earliest-deadline-first on one machine of speed `engines`
// (preemptive, fluid: a request may use all of it), a request dropped when
// its end passes unfinished. A schedule of the model the bound relaxes to.
uint64_t edf_failures(std::vector<BoundRequest> requests, double engines) {
  std::sort(requests.begin(), requests.end(),
            [](const BoundRequest& a, const BoundRequest& b) { return a.arrival < b.arrival; });
  struct Job {
    double end, left;
    bool operator>(const Job& o) const { return end > o.end; }
  };
  std::priority_queue<Job, std::vector<Job>, std::greater<>> ready;
  uint64_t failed = 0;
  std::size_t next = 0;
  double now = 0;
  while (next < requests.size() || !ready.empty()) {
    if (ready.empty()) now = std::max(now, requests[next].arrival);
    while (next < requests.size() && requests[next].arrival <= now) {
      ready.push({requests[next].end, requests[next].cost_s});
      ++next;
    }
    if (ready.empty()) continue;
    Job job = ready.top();
    ready.pop();
    if (job.end <= now) {
      ++failed;
      continue;
    }
    const double arrival = next < requests.size() ? requests[next].arrival : 1e300;
    const double until = std::min({arrival, job.end, now + job.left / engines});
    job.left -= (until - now) * engines;
    now = until;
    if (job.left > 1e-9) ready.push(job);
  }
  return failed;
}

TEST(CapacityBound, NeverAboveWhatAScheduleFails) {
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<double> unit(0, 1);
  uint64_t forced = 0;
  for (int instance = 0; instance < 300; ++instance) {
    const double engines = 1 + static_cast<double>(rng() % 3);
    std::vector<BoundRequest> requests(5 + rng() % 60);
    for (BoundRequest& r : requests) {
      r.arrival = 50 * unit(rng);
      r.end = r.arrival + 1 + 20 * unit(rng);
      r.cost_s = 0.1 + 5 * unit(rng);
    }
    const uint64_t bound = min_failures(requests, engines, 1, 30);
    EXPECT_LE(bound, edf_failures(requests, engines)) << "instance " << instance;
    forced += bound;
  }
  EXPECT_GT(forced, 0u);  // the instances are crowded enough to force some
}

TEST(CapacityBound, TheSimulatorsRunsFailAtLeastWhatItBounds) {
  auto scenario = load_scenario(ARBITER_SOURCE_DIR "/bench/scenarios/overload.yaml");
  ASSERT_TRUE(scenario) << scenario.error();
  scenario->duration_s = 250;  // through the minute at 2x
  scenario->drain_s = 60;
  const FailureBound bound = failure_bound(*scenario, scenario->seed, 5, 120);
  EXPECT_GT(bound.generated, 0u);
  EXPECT_GT(bound.superseded, 0u);
  EXPECT_GT(bound.failed, 0u);  // the 2x minute forces some
  for (const char* policy : {"fifo", "priority", "hybrid", "direct"}) {
    SCOPED_TRACE(policy);
    const PolicySummary p = run_virtual(*scenario, policy, scenario->seed);
    const auto& o = p.all.outcomes;
    auto n = [&](Outcome x) { return o[static_cast<std::size_t>(x)]; };
    EXPECT_EQ(p.all.generated, bound.generated);
    EXPECT_GE(n(Outcome::kSuperseded), bound.superseded);
    EXPECT_GE(n(Outcome::kRejected) + n(Outcome::kDropped) + n(Outcome::kCancelled) + n(Outcome::kUnfinished),
              bound.failed);
    EXPECT_LE(p.all.good, bound.good);
  }
  // The same fleet with work cut to a token fails no more, and a cut answer
  // may end before its successor arrives: fewer are superseded for sure.
  EXPECT_LE(bound.failed_cut, bound.failed);
  EXPECT_LE(bound.superseded_cut, bound.superseded);
  EXPECT_LE(bound.share_cut(), bound.share());
  EXPECT_LT(bound.good, bound.denominator());  // the 2x minute costs some good answers
}

TEST(CapacityBound, AVariantsEnginesAddNoGoodput) {
  // With the degraded variant's engines, hybrid sends work there (degraded,
  // not goodput): the bound on goodput counts the model's own engines only.
  auto scenario = load_scenario(ARBITER_SOURCE_DIR "/bench/scenarios/overload-variant.yaml");
  ASSERT_TRUE(scenario) << scenario.error();
  scenario->duration_s = 250;
  scenario->drain_s = 60;
  const FailureBound bound = failure_bound(*scenario, scenario->seed, 5, 120);
  Scenario without = *scenario;
  without.engine.variant_count = 0;
  EXPECT_EQ(failure_bound(without, scenario->seed, 5, 120).good, bound.good);
  for (const char* policy : {"priority", "hybrid"}) {
    SCOPED_TRACE(policy);
    EXPECT_LE(run_virtual(*scenario, policy, scenario->seed).all.good, bound.good);
  }
}

}  // namespace
}  // namespace arbiter::bench
