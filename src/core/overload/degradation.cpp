#include "core/overload/degradation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace arbiter::overload {

std::string_view stage_name(Stage stage) {
  switch (stage) {
    case Stage::kNormal: return "normal";
    case Stage::kElevated: return "elevated";
    case Stage::kHigh: return "high";
    case Stage::kShedding: return "shedding";
  }
  return "normal";
}

double StageRules::entry(Stage stage) const {
  switch (stage) {
    case Stage::kElevated: return elevated_at;
    case Stage::kHigh: return high_at;
    case Stage::kShedding: return shed_at;
    case Stage::kNormal: break;
  }
  return 0;
}

std::optional<std::string_view> invalid(const StageRules& rules) {
  double below = 0;
  for (const double t : {rules.elevated_at, rules.high_at, rules.shed_at}) {
    if (!(t > below) || t > 1) return "stage thresholds must rise within (0, 1]";
    below = t;
  }
  if (!(rules.exit_margin >= 0) || rules.exit_margin >= rules.elevated_at) {
    return "exit_margin must be in [0, the elevated threshold)";
  }
  return std::nullopt;
}

Stage StageController::step(double load, sched::TimePoint now) {
  auto target = Stage::kNormal;
  for (const Stage s : {Stage::kElevated, Stage::kHigh, Stage::kShedding}) {
    if (load >= rules_.entry(s)) target = s;
  }
  if (target > stage_) {
    stage_ = target;
    since_ = now;
    ++transitions_;
  } else if (stage_ != Stage::kNormal && now - since_ >= rules_.hold &&
             load < rules_.entry(stage_) - rules_.exit_margin) {
    stage_ = static_cast<Stage>(static_cast<uint8_t>(stage_) - 1);
    since_ = now;
    ++transitions_;
  }
  return stage_;
}

bool paused_at(Stage stage, const ClassActions& actions) {
  return actions.pause && !actions.protect && stage >= Stage::kElevated;
}

ClassActions default_actions(bool top_tier, bool background, int64_t default_cap) {
  if (background) return {.pause = true, .shed = true};
  if (top_tier) return {.protect = true};
  return {.cap_max_tokens = default_cap, .variant = true, .shed = true};
}

std::vector<ClassActions> default_class_actions(std::span<const sched::ClassPolicy> classes, int64_t default_cap) {
  int top = std::numeric_limits<int>::max();
  for (const sched::ClassPolicy& c : classes) {
    if (!c.background) top = std::min(top, c.engine_priority);
  }
  std::vector<ClassActions> out;
  out.reserve(classes.size());
  for (const sched::ClassPolicy& c : classes) {
    out.push_back(default_actions(!c.background && c.engine_priority == top, c.background, default_cap));
  }
  return out;
}

double shed_probability(double load, double weight, double shed_at, double max_shed) {
  if (!(load >= shed_at)) return 0;
  const double x = shed_at >= 1 ? 1.0 : std::clamp((load - shed_at) / (1 - shed_at), 0.0, 1.0);
  return max_shed * std::pow(x, std::max(weight, 1e-6));
}

Decision decide(Stage stage, const ClassActions& actions, double load, double weight, double shed_at,
                double max_shed, double uniform) {
  Decision d;
  if (actions.protect || stage == Stage::kNormal) return d;
  if (actions.cap_max_tokens > 0) d.cap = actions.cap_max_tokens;
  if (stage >= Stage::kHigh) d.variant = actions.variant;
  if (stage == Stage::kShedding && actions.shed) d.shed = uniform < shed_probability(load, weight, shed_at, max_shed);
  return d;
}

}  // namespace arbiter::overload
