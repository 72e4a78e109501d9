// Arrival processes and rate curves: mean rates, gamma burstiness, bursts,
// the day curve; and the workload stream built on them.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <map>
#include <vector>

#include "bench/arrivals.hpp"
#include "bench/scenario_yaml.hpp"
#include "bench/workload.hpp"

namespace arbiter::bench {
namespace {

std::vector<double> gaps(const TrafficSpec& t, double horizon, uint64_t seed) {
  ArrivalProcess p(t, horizon, seed);
  std::vector<double> out;
  double last = 0;
  for (double now = p.next(); now <= horizon; now = p.next()) {
    out.push_back(now - last);
    last = now;
  }
  return out;
}

double coefficient_of_variation(const std::vector<double>& x) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  return std::sqrt(var / static_cast<double>(x.size())) / mean;
}

TEST(BenchArrivals, PoissonMeanRateAndUnitVariation) {
  TrafficSpec t;
  t.rate.base = 100;
  const auto g = gaps(t, 1000, 1);
  // 100,000 expected; the standard deviation of a Poisson count is ~316.
  EXPECT_NEAR(static_cast<double>(g.size()), 100'000, 1'500);
  EXPECT_NEAR(coefficient_of_variation(g), 1.0, 0.02);
}

TEST(BenchArrivals, GammaKeepsTheRateAndSetsBurstiness) {
  for (double b : {0.25, 4.0}) {
    TrafficSpec t;
    t.rate.base = 50;
    t.arrival = {.gamma = true, .burstiness = b};
    const auto g = gaps(t, 2000, 2);
    EXPECT_NEAR(static_cast<double>(g.size()), 100'000, 3'000) << b;
    EXPECT_NEAR(coefficient_of_variation(g), 1 / std::sqrt(b), 0.05 / std::sqrt(b)) << b;
  }
}

TEST(BenchArrivals, BurstMultipliesTheRateWhileItLasts) {
  TrafficSpec t;
  t.rate.base = 200;
  t.rate.changes = {{.at_s = 100, .for_s = 50, .factor = 3},
                    {.at_s = 200, .for_s = std::nullopt, .factor = 0}};
  ArrivalProcess p(t, 300, 3);
  std::map<int, int> per_window;  // 50 s windows
  for (double now = p.next(); now < 300; now = p.next()) ++per_window[static_cast<int>(now / 50)];
  EXPECT_NEAR(per_window[0], 10'000, 400);
  EXPECT_NEAR(per_window[1], 10'000, 400);
  EXPECT_NEAR(per_window[2], 30'000, 700);
  EXPECT_NEAR(per_window[3], 10'000, 400);
  EXPECT_EQ(per_window[4], 0);  // factor 0 from 200 s on: the process ends
  EXPECT_EQ(p.next(), kNever);
}

TEST(BenchArrivals, DayCurveRunsFromNightToPeak) {
  DayCurve day{.period_s = 240, .night = 0.2, .peak = 3, .start_hour = 0};
  EXPECT_DOUBLE_EQ(day_factor(day, 0), 0.2);                 // midnight
  EXPECT_DOUBLE_EQ(day_factor(day, 240.0 * 9.5 / 24), 3.0);  // 09:30
  RateCurve curve({.base = 10, .changes = {}, .day = day}, 240);
  EXPECT_NEAR(curve.rate_at(240.0 * 3 / 24), 2, 1e-9);
  EXPECT_NEAR(curve.rate_at(240.0 * 9.6 / 24), 30, 1e-9);
}

TEST(BenchArrivals, AdvanceIntegratesTheRate) {
  RateCurve curve(
      {.base = 10, .changes = {{.at_s = 1, .for_s = 1, .factor = 2}}, .day = std::nullopt}, 10);
  EXPECT_DOUBLE_EQ(curve.advance(0, 5), 0.5);   // 5 events at 10/s
  EXPECT_DOUBLE_EQ(curve.advance(0.5, 25), 2);  // 5 to t=1, 20 at 20/s to t=2
  EXPECT_DOUBLE_EQ(curve.advance(2, 10), 3);    // back to 10/s
}

TEST(BenchWorkload, TimeOrderedCompleteAndDeterministic) {
  auto s = load_scenario(ARBITER_SOURCE_DIR "/bench/scenarios/smoke.yaml");
  ASSERT_TRUE(s) << s.error();
  Workload a(*s, s->seed), b(*s, s->seed);
  double last = 0;
  uint64_t n = 0, keyed = 0, with_history = 0, backlog_at_zero = 0;
  std::map<uint64_t, uint32_t> history_by_session;
  bool history_grows = true;
  while (auto r = a.next()) {
    auto r2 = b.next();
    ASSERT_TRUE(r2);
    EXPECT_EQ(r->arrival, r2->arrival);
    EXPECT_EQ(r->prompt_tokens(), r2->prompt_tokens());
    EXPECT_EQ(r->id, n++);
    EXPECT_GE(r->arrival, last);
    EXPECT_LE(r->arrival, s->duration_s);
    last = r->arrival;
    EXPECT_LE(r->output_tokens, r->max_tokens);
    EXPECT_LE(r->prompt_tokens() + r->max_tokens, s->engine.config.max_model_len);
    if (r->supersede_key != 0) ++keyed;
    if (r->history.key != 0) {
      ++with_history;
      auto [it, fresh] = history_by_session.emplace(r->history.key, r->history.tokens);
      if (!fresh) {
        history_grows = history_grows && r->history.tokens > it->second;
        it->second = r->history.tokens;
      }
    }
    if (s->classes[r->klass].traffic.kind == TrafficKind::kBacklog && r->arrival == 0)
      ++backlog_at_zero;
  }
  EXPECT_FALSE(b.next());
  EXPECT_GT(n, 100u);
  EXPECT_GT(keyed, 20u);
  EXPECT_GE(with_history, 3u);
  EXPECT_TRUE(history_grows);
  EXPECT_EQ(backlog_at_zero, 20u);  // smoke.yaml's jobs
}

// Typing traffic of `extra` (YAML keys), 60 s: requests per supersede key
// and their arrivals.
std::map<uint64_t, std::vector<double>> typing(const std::string& extra) {
  auto s = parse_scenario("name: t\nduration_s: 60\nclasses: [{name: completion, traffic: {kind: typing, "
                          "developers: 40, rate: 4, keystrokes: 5, keystroke_gap_ms: {dist: uniform, min: 100, "
                          "max: 200}" + extra + "}}]\n");
  EXPECT_TRUE(s) << s.error();
  std::map<uint64_t, std::vector<double>> by_key;
  if (!s) return by_key;
  for (Workload w(*s, 7); auto r = w.next();) by_key[r->supersede_key].push_back(r->arrival);
  return by_key;
}

TEST(BenchWorkload, APluginThatDebouncesSendsOnlyTheLastKeystrokeOfABurst) {
  // Keystrokes 100-200 ms apart, a 300 ms client debounce: one request per
  // burst of five, where the plain plugin sends all five (a few bursts at
  // the end of the run are cut either way).
  const auto plain = typing("");
  std::size_t sent_plain = 0, sent_debounced = 0;
  for (const auto& [key, arrivals] : plain) sent_plain += arrivals.size();
  for (const auto& [key, arrivals] : typing(", client_debounce_ms: 300")) sent_debounced += arrivals.size();
  EXPECT_GT(sent_plain, 1000u);
  EXPECT_NEAR(static_cast<double>(sent_plain), 5.0 * static_cast<double>(sent_debounced), 50);
  // With a debounce shorter than every gap, every keystroke goes out, that
  // much later.
  const auto short_debounce = typing(", client_debounce_ms: 50");
  for (const auto& [key, arrivals] : plain) {
    const auto& later = short_debounce.at(key);
    for (std::size_t i = 0; i < arrivals.size() && arrivals[i] < 59; ++i) {
      ASSERT_LT(i, later.size());
      EXPECT_NEAR(later[i], arrivals[i] + 0.05, 1e-9);
    }
  }
}

TEST(BenchWorkload, TypingAlongExtendsThePreviousKeystrokeByItsFirstToken) {
  const auto specs = [](const std::string& extra) {
    auto s = parse_scenario("name: t\nduration_s: 60\nclasses: [{name: completion, traffic: {kind: typing, "
                            "developers: 40, rate: 4, keystrokes: 5, output: {dist: uniform, min: 8, max: 64}, "
                            "prompt: {dist: uniform, min: 40, max: 80}" +
                            extra + "}}]\n");
    EXPECT_TRUE(s) << s.error();
    std::vector<RequestSpec> out;
    if (s) {
      for (Workload w(*s, 7); auto r = w.next();) out.push_back(*r);
    }
    return out;
  };
  const auto plain = specs("");
  const auto along = specs(", type_along: 0.5");
  ASSERT_EQ(plain.size(), along.size());
  std::map<uint64_t, RequestSpec> by_text;
  std::size_t extending = 0;
  for (std::size_t i = 0; i < along.size(); ++i) {
    const RequestSpec& r = along[i];
    // The same arrivals, keys and files: only the typed-along prompts differ.
    EXPECT_EQ(r.arrival, plain[i].arrival);
    EXPECT_EQ(r.supersede_key, plain[i].supersede_key);
    EXPECT_EQ(r.prefix.tokens, plain[i].prefix.tokens);
    EXPECT_EQ(plain[i].extends, 0u);
    EXPECT_EQ(plain[i].own_key, 0u);  // own tokens unhashed, as before typing along
    ASSERT_TRUE(by_text.emplace(r.text, r).second) << "texts are unique";
    if (r.extends == 0) continue;
    ++extending;
    // The previous keystroke of the same developer, plus one typed token.
    const auto prev = by_text.find(r.extends);
    ASSERT_NE(prev, by_text.end());
    EXPECT_EQ(prev->second.supersede_key, r.supersede_key);
    EXPECT_LE(prev->second.arrival, r.arrival);
    EXPECT_EQ(r.unique_tokens, prev->second.unique_tokens + 1);
    EXPECT_EQ(r.output_tokens, prev->second.output_tokens - 1);
    EXPECT_EQ(r.typed_tokens, 1u);
    // Its prompt holds the previous one whole: the engine's cache finds
    // every full block of it (the own tokens' too), as live mode's text does.
    EXPECT_EQ(r.own_key, prev->second.own_key);
    std::vector<uint64_t> before, after;
    prompt_block_hashes(prev->second, 16, before);
    prompt_block_hashes(r, 16, after);
    EXPECT_EQ(before.size(), prev->second.prompt_tokens() / 16);
    ASSERT_GE(after.size(), before.size());
    EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));
  }
  // Four of a burst's five keystrokes have a previous one; half of them type along.
  ASSERT_GT(along.size(), 1000u);
  EXPECT_NEAR(static_cast<double>(extending) / static_cast<double>(along.size()), 0.4, 0.04);
}

TEST(BenchWorkload, DevelopersTypeAtTheirOwnPace) {
  // The median gap between a developer's keystrokes (within bursts, < 2 s)
  // varies across developers only when rhythm_spread says so.
  const auto spread_of_medians = [](const std::map<uint64_t, std::vector<double>>& by_key) {
    std::vector<double> medians;
    for (const auto& [key, arrivals] : by_key) {
      std::vector<double> gaps;
      for (std::size_t i = 1; i < arrivals.size(); ++i) {
        if (arrivals[i] - arrivals[i - 1] < 2) gaps.push_back(arrivals[i] - arrivals[i - 1]);
      }
      if (gaps.size() < 8) continue;
      std::sort(gaps.begin(), gaps.end());
      medians.push_back(gaps[gaps.size() / 2]);
    }
    std::sort(medians.begin(), medians.end());
    return medians.empty() ? 0.0 : medians.back() / medians.front();
  };
  const double alike = spread_of_medians(typing(""));
  const double paced = spread_of_medians(typing(", rhythm_spread: 0.5"));
  EXPECT_LT(alike, 1.5);
  EXPECT_GT(paced, 2.0);
}

TEST(BenchWorkload, MaxRequestsStopsTheStream) {
  auto s = parse_scenario("name: t\nmax_requests: 17\nclasses: [{name: a, traffic: {rate: 100}}]");
  ASSERT_TRUE(s) << s.error();
  Workload w(*s, 1);
  int n = 0;
  while (w.next()) ++n;
  EXPECT_EQ(n, 17);
}

}  // namespace
}  // namespace arbiter::bench
