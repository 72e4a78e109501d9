#include "bench/regret.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace arbiter::bench {
namespace {

uint64_t count(const GroupSummary& g, Outcome o) { return g.outcomes[static_cast<std::size_t>(o)]; }

// A P99 of a class with no completed request is NaN: it cannot regress, and
// its failures are judged on their own.
double p99(const GroupSummary& g) { return std::isnan(g.ttft_ms.p99) ? 0 : g.ttft_ms.p99; }

}  // namespace

uint64_t failed_requests(const GroupSummary& g) {
  return count(g, Outcome::kRejected) + count(g, Outcome::kDropped) +
         count(g, Outcome::kCancelled) + count(g, Outcome::kUnfinished);
}

double failed_share(const GroupSummary& g) {
  const uint64_t answered = g.generated - count(g, Outcome::kSuperseded);
  return answered ? static_cast<double>(failed_requests(g)) / static_cast<double>(answered) : 0;
}

std::size_t critical_class(const Scenario& scenario) {
  std::size_t best = scenario.classes.size();
  for (std::size_t c = 0; c < scenario.classes.size(); ++c) {
    const auto& p = scenario.classes[c].policy;
    if (p.background) continue;
    if (best == scenario.classes.size() ||
        p.engine_priority < scenario.classes[best].policy.engine_priority) {
      best = c;
    }
  }
  return best;
}

bool debounces(const ClassSpec& klass) {
  return klass.policy.debounce > sched::Duration::zero() || klass.policy.adaptive_debounce;
}

bool comparable(const RunResults& results) {
  return find_policy(results, "fifo") && find_policy(results, "priority") && find_policy(results, "hybrid");
}

std::vector<Regret> find_regrets(const Scenario& scenario, const RunResults& results) {
  std::vector<Regret> out;
  const PolicySummary* fifo = find_policy(results, "fifo");
  const PolicySummary* prio = find_policy(results, "priority");
  const PolicySummary* hybrid = find_policy(results, "hybrid");
  if (!fifo || !prio || !hybrid) return out;

  const double best_goodput = std::max(fifo->all.goodput_rps, prio->all.goodput_rps);
  if (hybrid->all.goodput_rps < 0.95 * best_goodput) {
    out.push_back({"goodput req/s", hybrid->all.goodput_rps, 0.95 * best_goodput});
  }
  if (const PolicySummary* direct = find_policy(results, "direct");
      direct && direct->all.good_share >= kDirectMeetsSlo &&
      hybrid->all.goodput_rps < 0.95 * direct->all.goodput_rps) {
    out.push_back({"goodput req/s against direct", hybrid->all.goodput_rps,
                   0.95 * direct->all.goodput_rps});
  }
  const std::size_t critical = critical_class(scenario);
  for (std::size_t c = 0; c < scenario.classes.size(); ++c) {
    if (scenario.classes[c].policy.background) continue;
    const GroupSummary& h = hybrid->classes[c];
    const GroupSummary& f = fifo->classes[c];
    const GroupSummary& p = prio->classes[c];
    const std::string& name = scenario.classes[c].name;
    if (c == critical) {
      const double ttft_bound = 1.1 * p99(p) + 20;
      if (p99(h) > ttft_bound) out.push_back({name + ": TTFT P99 ms", p99(h), ttft_bound});
      if (failed_requests(h) > failed_requests(p)) {
        out.push_back({name + ": failed requests", static_cast<double>(failed_requests(h)),
                       static_cast<double>(failed_requests(p))});
      }
      continue;
    }
    const double ttft_bound = 1.05 * std::max(p99(f), p99(p)) + 20;
    if (p99(h) > ttft_bound) out.push_back({name + ": TTFT P99 ms", p99(h), ttft_bound});
    const double failed_bound = std::max(failed_share(f), failed_share(p)) + 0.005;
    if (failed_share(h) > failed_bound + 1e-9) {
      out.push_back({name + ": failed share", failed_share(h), failed_bound});
    }
  }
  // Neither prefix affinity nor the debounce may cost a class its tail
  // (issue 12): hybrid against itself without the feature, for the classes
  // the feature touches.
  const auto against = [&](std::string_view variant, std::string_view feature, auto touches) {
    const PolicySummary* plain = find_policy(results, variant);
    if (plain == nullptr) return;
    for (std::size_t c = 0; c < scenario.classes.size(); ++c) {
      if (scenario.classes[c].policy.background || !touches(scenario.classes[c])) continue;
      const double bound = 1.05 * p99(plain->classes[c]) + 20;
      if (p99(hybrid->classes[c]) > bound) {
        out.push_back({std::string(feature) + ": " + scenario.classes[c].name + ": TTFT P99 ms",
                       p99(hybrid->classes[c]), bound});
      }
    }
  };
  against(kHybridNoAffinity, "affinity", [](const ClassSpec&) { return true; });
  against(kHybridNoDebounce, "debounce", debounces);
  return out;
}

std::string describe(const Regret& regret) {
  char buf[256];
  const bool share = regret.figure.ends_with("share");
  if (share) {
    std::snprintf(buf, sizeof buf, "%s: hybrid %.2f%%, allowed %.2f%%", regret.figure.c_str(),
                  regret.hybrid * 100, regret.bound * 100);
  } else if (std::isinf(regret.hybrid)) {
    std::snprintf(buf, sizeof buf, "%s: hybrid over 1%% failed, allowed %.0f", regret.figure.c_str(), regret.bound);
  } else if (regret.figure.find("goodput") != std::string::npos || regret.figure.ends_with("served requests")) {
    std::snprintf(buf, sizeof buf, "%s: hybrid %.2f, at least %.2f", regret.figure.c_str(),
                  regret.hybrid, regret.bound);
  } else {
    std::snprintf(buf, sizeof buf, "%s: hybrid %.0f, allowed %.0f", regret.figure.c_str(),
                  regret.hybrid, regret.bound);
  }
  return buf;
}

}  // namespace arbiter::bench
