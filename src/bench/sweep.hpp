// The randomised sweep behind the regret yardstick (issue 11): generated
// scenarios nobody tuned for, each run under fifo, priority and hybrid with
// the gateway's default classes. A scenario is generated as YAML text and
// read by the same parser as shipped scenarios, so every generated scenario
// can be written out and re-run on its own (`arbiter-bench virtual`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace arbiter::bench {

struct SweepShape {
  double duration_s = 60;  // arrivals per scenario
  double drain_s = 120;    // then unfinished work is cut
  uint32_t max_engines = 6;
  // Typing through (issue 12): the completion class's keystrokes type along
  // their suggestions this often (TrafficSpec::type_along), and its
  // scheduler class's ClassPolicy::typing_through is set (none: the default
  // class's). Neither draws from the generator: a scenario is the same one
  // with either.
  double type_along = 0;
  std::optional<bool> typing_through;  // none: the class's default
  std::string adaptive_capacity;  // YAML flow mapping: every scenario's engine.adaptive_capacity; empty: none
  std::string scheduler;          // YAML flow mapping: every scenario's scheduler section; empty: none
  std::string degradation;        // YAML flow mapping: every scenario's degradation section; empty: none
  // One class's scheduler keys in every scenario that has it, e.g.
  // {"completion", "{adaptive_debounce: true}"}: the class name and a YAML
  // flow mapping (joined with typing_through's key for completion).
  std::string class_name, class_scheduler;
};

// The YAML of scenario `index` of the sweep seeded `seed`: 1-`max_engines`
// engines with 32-256 slots, 1-20 tenants (sometimes one flooding at 10x
// the others), a random subset of the default classes (critical,
// completion, chat, batch) with their usual traffic shapes, a total load of
// 0.5x-2.5x the engines' estimated capacity, and sometimes a 2-3x surge.
// Deterministic in (seed, index).
std::string random_scenario_yaml(uint64_t seed, uint32_t index, const SweepShape& shape = {});

}  // namespace arbiter::bench

#include <vector>

#include "bench/regret.hpp"

namespace arbiter::bench {

// One generated scenario's verdict, judged by the yardstick of DECISIONS.md
// (bench/yardstick.hpp) over runs that differ only in the arrival seed.
struct SweepCase {
  uint32_t index = 0;
  std::string name;
  std::string finding;  // the generator's one-line description
  std::string yaml;     // to re-run it on its own
  std::vector<Regret> regrets;   // hybrid against fifo, priority and direct (D1-D5)
  // Hybrid against itself without one of its features, the classes the
  // feature touches ("affinity: ..." against hybrid-no-affinity, "debounce:
  // ..." against hybrid-no-debounce), by the same rules.
  std::vector<Regret> features;
  // The noise floor (D1): hybrid-tiebreak, a tie-break and nothing else,
  // against hybrid.
  std::vector<Regret> noise;
  // The issue-11 yardstick (bench/regret.hpp) on the first seed's run,
  // printed beside the new one for a release.
  std::vector<Regret> old_regrets;
  // fifo, priority, hybrid, direct: goodput without flooders (D2), the
  // median over the seeds.
  double goodput[4] = {0, 0, 0, 0};
  bool direct_meets_slo = false;  // direct's good share >= kDirectMeetsSlo on the median
  double cpu_s = 0;
};

// Runs scenarios first..first+count-1 of the sweep seeded `seed`, each with
// `seeds` arrival seeds, under fifo, priority, hybrid, direct,
// hybrid-no-affinity, hybrid-no-debounce and hybrid-tiebreak, `jobs`
// scenarios at a time.
std::vector<SweepCase> run_sweep(uint64_t seed, uint32_t first, uint32_t count,
                                 const SweepShape& shape, unsigned jobs, unsigned seeds = 3);

// The sweep's summary in Markdown: counts, every losing figure, the goodput
// ratios; `seeds` as run_sweep was given.
std::string render_sweep_markdown(uint64_t seed, unsigned seeds, const std::vector<SweepCase>& cases,
                                  const std::string& command);

// A number as the sweep writes it, in scenarios and reports alike: four
// significant digits.
std::string sweep_number(double v);

}  // namespace arbiter::bench
