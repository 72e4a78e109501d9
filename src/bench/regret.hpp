// The regret yardstick (issue 11): where `hybrid` does worse than the classic
// schemes it replaces, `fifo` and `priority`, on the same requests. A run
// that lacks one of the three policies has nothing to compare and no regret.
//   - overall goodput below 95% of the better baseline's;
//   - the critical class (the non-background class `priority` serves first):
//     P99 TTFT above 1.1x priority's + 20 ms, or more failed requests;
//   - any other non-background class worse than both baselines: P99 TTFT
//     above 1.05x the worse one's + 20 ms, or a failed share more than 0.5
//     point above the worse one's.
// Background classes are judged only through overall goodput. Failed: 429,
// 503, client time-out, or still unfinished when the run was cut.
// When the run also holds `direct` (no gateway) and direct meets its SLOs
// (kDirectMeetsSlo of its answered requests good), hybrid's goodput must be
// at least 95% of direct's: the gateway must not cost goodput at a load the
// engines handle on their own. When it holds `hybrid-no-affinity`, prefix
// affinity must not make any non-background class's P99 TTFT worse than
// without it by more than 5% + 20 ms (issue 12).
#pragma once

#include <string>
#include <vector>

#include "bench/run_info.hpp"

namespace arbiter::bench {

inline constexpr double kDirectMeetsSlo = 0.95;

struct Regret {
  std::string figure;  // e.g. "goodput", "chat: TTFT P99 ms", "critical: failed"
  double hybrid = 0;   // hybrid's value
  double bound = 0;    // the worst value allowed (exceeded, or undercut for goodput)
};

// Failed requests (429, 503, client time-out, unfinished) of a group.
uint64_t failed_requests(const GroupSummary& g);
// Of the requests the system had to answer (superseded ones excluded).
double failed_share(const GroupSummary& g);

// The class `priority` serves first among non-background classes (lowest
// engine_priority, then scenario order); scenario.classes.size() if none.
std::size_t critical_class(const Scenario& scenario);

// The classes hybrid-no-debounce changes: a debounce or adaptive debounce.
bool debounces(const ClassSpec& klass);

// True when the results hold fifo, priority and hybrid, so regrets can be judged.
bool comparable(const RunResults& results);

// Every figure where hybrid loses by the yardstick; empty when it never does
// (or when the run is not comparable()).
std::vector<Regret> find_regrets(const Scenario& scenario, const RunResults& results);

// "figure: hybrid X, allowed Y" lines for reports.
std::string describe(const Regret& regret);

}  // namespace arbiter::bench
