#include "gateway/engine_signal_log.hpp"

#include <boost/json.hpp>
#include <chrono>

namespace arbiter {

namespace {

// The health part of a verdict, worse higher: 0 up, 1 stale, 2 down.
int health(const sched::BackendSignal& signal) { return signal.down ? 2 : signal.stale ? 1 : 0; }
constexpr std::string_view kHealthNames[] = {"up", "stale", "down"};

}  // namespace

std::optional<std::string> engine_signal_line(std::string_view backend,
                                              const sched::BackendSignal& before,
                                              const sched::BackendSignal& after,
                                              const MonitorState& state, std::string_view why,
                                              sched::TimePoint now) {
  const int from = health(before);
  const int to = health(after);
  if (from == to) return std::nullopt;
  // A rare line: Boost.JSON escapes the configured backend name.
  boost::json::object line;
  line["level"] = to > from ? "warn" : "info";
  line["event"] = "engine_signal";
  line["backend"] = backend;
  line["from"] = kHealthNames[from];
  line["to"] = kHealthNames[to];
  line["silent_ms"] =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - state.last_answer).count();
  if (to > 0) {
    line["failed_scrapes_in_row"] = state.consecutive_failures;
    line["refused"] = state.refused;
    line["why"] = why.empty() ? std::string_view("no fresh figures") : why;
  }
  return boost::json::serialize(line);
}

}  // namespace arbiter
