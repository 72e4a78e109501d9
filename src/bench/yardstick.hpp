// The yardstick of ../shared/DECISIONS.md (D1-D5, D8): how hybrid is judged
// against fifo, priority and direct clients, the way an operator judges it.
// One run gives a Check per figure (judge); three runs of the same scenario
// that differ only in the arrival seed give the verdict (combine, D1).
//   D2  a flooding tenant's requests leave the class rows and the goodput
//       (PolicySummary::fair_classes, fair_all); the flooder is judged on
//       its own: it must be served at least 90% of min(its requests, the
//       larger of its weight's share of what the class was served and what
//       the others left), the class's service being hybrid's or priority's,
//       whichever is more (less than priority's means idle slots);
//   D3  a class's P99 TTFT counts its failed requests as slower than every
//       served one (GroupSummary::ttft_p99_failed_ms);
//   D4  a non-background class whose P99 (D3) is within its ttft_slo and
//       whose failed share is at most 1% has no loss; the top class's failed
//       share must still stay within priority's + 0.1 point;
//   D5  goodput below fifo's bound is a loss only when fifo keeps the top
//       class's goodput at 95% of hybrid's or more; below priority's, or
//       direct's where direct meets its SLOs, always;
//   D8  the top class's P99 is compared with priority's only where priority
//       keeps it within its SLO.
// The tolerances are one run's noise, measured (D1's noise floor): a P99
// above 1.2x the reference's + 20 ms (for a class other than the top one,
// the worse of fifo's and priority's), a failed share above 1.1x the
// reference's + 1 point, goodput below 95% of the reference's less twice
// its count's Poisson noise. A P99 that is a failure (over 1% failed) loses
// only when the failed share does.
// The same rules judge a hybrid variant against hybrid (judge_variant): the
// noise floor (a tie-break variant) and what a feature costs the classes it
// touches (hybrid against hybrid without it).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/regret.hpp"
#include "bench/run_info.hpp"

namespace arbiter::bench {

// One figure of one run.
struct Check {
  std::string figure;
  double value = 0;            // the judged policy's
  double bound = 0;            // the worst allowed
  bool higher_is_better = false;
  bool loses = false;          // in this run, exemptions (D4, D8) applied
};

// D3's P99 of a group as the yardstick compares it: 0 when nothing was
// answered (it cannot regress; its failures are judged on their own).
double judged_p99(const GroupSummary& g);

// Every figure of hybrid against fifo, priority and (when present) direct;
// empty when the run is not comparable().
std::vector<Check> judge(const Scenario& scenario, const RunResults& results);

// `variant` against `reference` (two runs of the same requests): goodput,
// and per non-background class that `touches` selects, P99 (D3) and the
// failed share, with the tolerances above and D4 exempting a class within
// its SLO. `latency_only`: only the P99s, named
// "<prefix>: <class>: TTFT P99 ms". Empty when either run is missing.
std::vector<Check> judge_variant(const Scenario& scenario, const RunResults& results,
                                 std::string_view variant, std::string_view reference,
                                 std::string_view prefix, bool latency_only,
                                 const std::function<bool(const ClassSpec&)>& touches);

// The arrival seed of run `k` of a scenario whose first run has `seed`.
inline uint64_t arrival_seed(uint64_t seed, unsigned k) { return seed + k * 1'000'003ULL; }

// The verdict of `runs` runs as a report section (Markdown).
std::string render_verdict(const std::vector<Regret>& losses, unsigned runs);

// D1: the figures that lose on a majority of the runs (2 of 3) and on their
// medians (the median value against the median bound). A figure missing
// from a run does not lose there.
std::vector<Regret> combine(const std::vector<std::vector<Check>>& runs);

}  // namespace arbiter::bench
