// Staged degradation (../shared/BRIEF.md, 4): as a pool's load coefficient
// L (load_coefficient.hpp) rises, what is served changes, in stages:
//
//   normal     below 70%
//   elevated   from 70%: degradable classes' max_tokens capped, background
//              work gets no new dispatch (it resumes below)
//   high       from 85%: degradable classes go to the model's `degraded`
//              variant (a quantised or smaller model); the result cache of a
//              later issue answers first here
//   shedding   from 95%: graded shedding, each sheddable class refused with
//              a probability that rises with L and falls with its weight
//
// Each stage keeps the actions of those below it. A protected class (by
// default the top priority tier: `critical`) is never degraded or shed.
// Pure: no I/O, clock passed in. docs/overload.md has the rules and the
// numbers behind the defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/scheduler_config.hpp"
#include "core/scheduler_types.hpp"

namespace arbiter::overload {

enum class Stage : uint8_t { kNormal, kElevated, kHigh, kShedding };
inline constexpr std::size_t kStages = 4;
std::string_view stage_name(Stage stage);  // "normal", "elevated", "high", "shedding"

// When the stages change.
struct StageRules {
  // L at which each stage above normal is entered.
  double elevated_at = 0.70;
  double high_at = 0.85;
  double shed_at = 0.95;
  // A stage is left once L is this far below its entry (hysteresis) ...
  double exit_margin = 0.05;
  // ... and it has held at least this long (a stage is entered at once).
  sched::Duration hold = std::chrono::seconds(10);

  // The entry of a stage above normal.
  double entry(Stage stage) const;
};

// Why the rules are not usable, or nullopt: thresholds rising within (0, 1],
// a margin in [0, the lowest threshold).
std::optional<std::string_view> invalid(const StageRules& rules);

// One pool's stage. step() moves up at once to the highest stage whose entry
// L has reached, and down one stage at a time, only after `hold` in the
// current stage and with L below its entry by the margin: a stage cannot
// flap faster than `hold`, and a climbing L is answered at once.
class StageController {
 public:
  explicit StageController(StageRules rules = {}) : rules_(rules) {}

  // Returns the stage after this load reading; `now` never goes back.
  Stage step(double load, sched::TimePoint now);

  Stage stage() const { return stage_; }
  sched::TimePoint since() const { return since_; }  // when the current stage was entered
  uint64_t transitions() const { return transitions_; }
  const StageRules& rules() const { return rules_; }

 private:
  StageRules rules_;
  Stage stage_ = Stage::kNormal;
  sched::TimePoint since_{};
  uint64_t transitions_ = 0;
};

// What one class gets in each stage (a class's `degrade:` settings).
struct ClassActions {
  bool protect = false;        // never degraded, paused or shed
  int64_t cap_max_tokens = 0;  // elevated and above: max_tokens lowered to this (0: no cap)
  bool pause = false;          // elevated and above: queued work gets no new dispatch
  bool variant = false;        // high and above: served by the model's `degraded` variant
  bool shed = false;           // shedding: refused with shed_probability()
};

// The defaults of a class without `degrade:` settings: protected in the top
// priority tier; background work paused and shed; any other class capped at
// `default_cap`, sent to the variant and shed.
ClassActions default_actions(bool top_tier, bool background, int64_t default_cap);

// Whether a class with these actions takes no new dispatch at `stage`.
bool paused_at(Stage stage, const ClassActions& actions);

// Each class's defaults (default_actions): the top priority tier is the
// lowest engine_priority among the non-background classes. The gateway and
// arbiter-bench read the classes the same way.
std::vector<ClassActions> default_class_actions(std::span<const sched::ClassPolicy> classes, int64_t default_cap);

// The shedding probability of a class of weight `weight` (> 0) at load L:
// max_shed x x^weight, where x = (L - shed_at) / (1 - shed_at) clamped to
// [0, 1]. 0 below shed_at; rises with L; falls with the weight (a batch class
// of weight 0.5 is shed before chat's 1, chat before completion's 2).
double shed_probability(double load, double weight, double shed_at, double max_shed);

// What happens to one request of a class at the pool's stage.
struct Decision {
  std::optional<int64_t> cap;  // lower max_tokens to this
  bool variant = false;        // reroute to the model's degraded variant
  bool shed = false;           // refuse (429)
};

// `uniform` in [0, 1) decides a shed (the caller's random draw).
Decision decide(Stage stage, const ClassActions& actions, double load, double weight, double shed_at,
                double max_shed, double uniform);

}  // namespace arbiter::overload
