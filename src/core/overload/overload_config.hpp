// The `degradation:` section (gateway/stages/degrade/ reads it): the load
// coefficient's weights and smoothing, the stages' thresholds and hold, and
// the defaults of the classes' actions. Classes override theirs with a
// `degrade:` mapping (ClassConfig::degrade). docs/overload.md.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/overload/degradation.hpp"
#include "core/overload/load_coefficient.hpp"

namespace arbiter::overload {

struct DegradationConfig : LoadWeights, StageRules {
  // On by default (DECISIONS.md D7: the sweep and the shipped scenarios
  // lose nothing with it; docs/overload.md). Off, L and the stage it would
  // take are still computed and exported (arbiter_pool_load,
  // arbiter_degradation_stage). Without engine signals it has no load to
  // read and stays at normal.
  bool enabled = true;
  sched::Duration smoothing = std::chrono::seconds(2);  // time constant of each backend's L
  double max_shed = 0.9;                                // shedding's probability at L = 1, weight 1
  // The max_tokens cap of a degradable class without its own `degrade:`
  // settings, from the elevated stage.
  int64_t cap_max_tokens = 512;
};

}  // namespace arbiter::overload
