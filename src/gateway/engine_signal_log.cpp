#include "gateway/engine_signal_log.hpp"

#include <boost/json.hpp>
#include <chrono>

namespace arbiter {

namespace {

int rank(std::string_view health) { return health == "down" ? 2 : health == "stale" ? 1 : 0; }

}  // namespace

std::string_view signal_health(const sched::BackendSignal& signal) {
  return signal.down ? "down" : signal.stale ? "stale" : "up";
}

std::optional<std::string> engine_signal_line(std::string_view backend,
                                              const sched::BackendSignal& before,
                                              const sched::BackendSignal& after,
                                              const MonitorState& state, std::string_view why,
                                              sched::TimePoint now) {
  const std::string_view from = signal_health(before);
  const std::string_view to = signal_health(after);
  if (from == to) return std::nullopt;
  // A rare line: Boost.JSON escapes the configured backend name.
  boost::json::object line;
  line["level"] = rank(to) > rank(from) ? "warn" : "info";
  line["event"] = "engine_signal";
  line["backend"] = backend;
  line["from"] = from;
  line["to"] = to;
  line["silent_ms"] =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - state.last_answer).count();
  if (to != "up") {
    line["failed_scrapes_in_row"] = state.consecutive_failures;
    line["refused"] = state.refused;
    line["why"] = why.empty() ? std::string_view("no fresh figures") : why;
  }
  return boost::json::serialize(line);
}

}  // namespace arbiter
