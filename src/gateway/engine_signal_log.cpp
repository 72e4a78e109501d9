#include "gateway/engine_signal_log.hpp"

#include <chrono>

#include "observability/event_log.hpp"

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
  // The event logger's line (escaped, typed fields), written by the
  // monitor's own log callback.
  const EventLevel level = to > from ? EventLevel::kWarn : EventLevel::kInfo;
  const int64_t silent_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - state.last_answer).count();
  std::string line =
      to == 0 ? event_line(level, "engine_signal",
                           {{"backend", backend}, {"from", kHealthNames[from]}, {"to", kHealthNames[to]},
                            {"silent_ms", silent_ms}})
              : event_line(level, "engine_signal",
                           {{"backend", backend},
                            {"from", kHealthNames[from]},
                            {"to", kHealthNames[to]},
                            {"silent_ms", silent_ms},
                            {"failed_scrapes_in_row", state.consecutive_failures},
                            {"refused", state.refused},
                            {"why", why.empty() ? std::string_view("no fresh figures") : why}});
  line.pop_back();  // its newline: the callback writes whole lines
  return line;
}

}  // namespace arbiter
