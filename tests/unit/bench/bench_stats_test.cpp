// Report arithmetic: nearest-rank percentiles, the log histogram, Jain's
// index, and goodput / SLO accounting in the collector.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "bench/results.hpp"
#include "bench/scenario_yaml.hpp"
#include "bench/stats.hpp"

namespace arbiter::bench {
namespace {

TEST(BenchStats, NearestRankPercentiles) {
  std::vector<float> v(100);
  std::iota(v.begin(), v.end(), 1.0f);
  std::shuffle(v.begin(), v.end(), std::mt19937(3));
  const Percentiles p = percentiles(v);
  EXPECT_EQ(p.count, 100u);
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p90, 90);
  EXPECT_EQ(p.p99, 99);
  EXPECT_EQ(p.p999, 100);
  std::vector<float> one = {7};
  EXPECT_EQ(percentiles(one).p50, 7);
  std::vector<float> none;
  EXPECT_EQ(percentiles(none).p99, 0);
}

TEST(BenchStats, LogHistogramWithinOnePercent) {
  LogHistogram h;
  std::vector<float> exact;
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> d(-3, 1);
  for (int i = 0; i < 100'000; ++i) {
    const double v = d(rng);
    h.add(v);
    exact.push_back(static_cast<float>(v));
  }
  const Percentiles e = percentiles(exact);
  const Percentiles p = h.percentiles();
  EXPECT_EQ(p.count, 100'000u);
  for (auto [approx, want] :
       {std::pair{p.p50, e.p50}, {p.p90, e.p90}, {p.p99, e.p99}, {p.p999, e.p999}}) {
    EXPECT_NEAR(approx, want, want * 0.01);
  }
  LogHistogram other;
  other.add(1000);
  h.merge(other);
  EXPECT_EQ(h.count(), 100'001u);
  EXPECT_NEAR(h.percentile(1.0), 1000, 10);
}

TEST(BenchStats, JainIndex) {
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{1, 1, 1, 1}), 1);
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{1, 0, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{2, 1}), 9.0 / 10.0);
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{}), 1);
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{0, 0}), 1);
}

// Goodput as vllm bench serve --goodput: completed requests meeting every
// SLO of their class, per second of the run.
TEST(BenchStats, GoodputCountsRequestsMeetingEverySlo) {
  auto s = parse_scenario(R"(
name: t
duration_s: 8
tenants: [{name: a}, {name: b}]
classes:
  - {name: chat, slo: {ttft_ms: 100, tpot_ms: 10, e2e_ms: 1000}, traffic: {}}
)");
  ASSERT_TRUE(s) << s.error();
  Collector c(*s);
  auto completed = [](uint16_t tenant, double ttft, double e2e, uint32_t tokens,
                      double deadline = kNever) {
    return RequestRecord{.klass = 0,
                         .tenant = tenant,
                         .outcome = Outcome::kCompleted,
                         .arrival = 1,
                         .first_token = 1 + ttft,
                         .finished = 1 + e2e,
                         .output_tokens = tokens,
                         .deadline = deadline};
  };
  c.record(completed(0, 0.05, 0.5, 51));       // good: tpot (500-50)/50 = 9 ms
  c.record(completed(0, 0.15, 0.5, 51));       // TTFT over
  c.record(completed(0, 0.05, 0.9, 51));       // TPOT 17 ms over
  c.record(completed(1, 0.05, 0.5, 51, 1.2));  // deadline missed
  c.record(completed(1, 0.05, 0.2, 1));        // good (one token: no TPOT)
  c.record({.klass = 0, .tenant = 1, .outcome = Outcome::kSuperseded, .arrival = 1});
  c.record({.klass = 0, .tenant = 1, .outcome = Outcome::kRejected, .arrival = 1});
  EngineTotals totals;
  totals.duration_s = 4;
  totals.engines = 1;
  totals.busy_s = 2;
  totals.work_tokens = 1000;
  totals.wasted_cancel_tokens = 50;
  const PolicySummary p = c.summarize("hybrid", totals);
  EXPECT_EQ(p.all.generated, 7u);
  EXPECT_EQ(p.all.good, 2u);
  // Per second of the arrival window (8 s), not of the run (4 s): every
  // policy divides by the same.
  EXPECT_DOUBLE_EQ(p.all.goodput_rps, 0.25);
  EXPECT_DOUBLE_EQ(p.all.good_share, 2.0 / 6.0);  // superseded requests are not judged
  EXPECT_EQ(p.all.with_deadline, 1u);
  EXPECT_EQ(p.all.met_deadline, 0u);
  EXPECT_EQ(p.tenants[0].good, 1u);
  EXPECT_EQ(p.tenants[1].good, 1u);
  // Tenant a: 1 of 3 good; tenant b: 1 of 3 judged (one superseded).
  EXPECT_DOUBLE_EQ(p.jain, 1.0);
  EXPECT_DOUBLE_EQ(p.utilisation, 0.5);
  EXPECT_DOUBLE_EQ(p.waste_share, 0.05);
  EXPECT_EQ(p.all.ttft_ms.count, 5u);
  EXPECT_NEAR(p.all.ttft_ms.p99, 150, 1e-3);
  EXPECT_EQ(p.all.tpot_ms.count, 4u);
  EXPECT_EQ(p.all.outcomes[static_cast<std::size_t>(Outcome::kRejected)], 1u);
  EXPECT_EQ(p.all.ttft_cdf_ms.size(), 201u);
}

}  // namespace
}  // namespace arbiter::bench
