// The log line an operator reads when the engine-signal monitor changes its
// mind about a backend's health: down, stale, or back up. `saturated` is not
// logged: it follows load from one scrape to the next; the
// arbiter_backend_saturated gauge shows it, and the monitor counts its
// transitions (MonitorCounters::saturated_transitions).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/engine_metrics.hpp"
#include "core/scheduler_types.hpp"

namespace arbiter {

// One JSON line (no newline) when `before` and `after` differ in health, else
// nothing: level warn when it got worse, info when it got better; `why` (the
// last failed scrape's problem; empty when only time made the figures old:
// "no fresh figures") and the failure run while it is not up; how long the
// engine has been silent, from `state.last_answer` to `now`.
std::optional<std::string> engine_signal_line(std::string_view backend,
                                              const sched::BackendSignal& before,
                                              const sched::BackendSignal& after,
                                              const MonitorState& state, std::string_view why,
                                              sched::TimePoint now);

}  // namespace arbiter
