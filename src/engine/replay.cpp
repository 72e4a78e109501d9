#include "engine/replay.hpp"

#include <algorithm>

namespace arbiter::engine {

ReplayResult replay(Engine& engine, std::vector<Arrival> arrivals) {
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [](const Arrival& a, const Arrival& b) { return a.time < b.time; });
  ReplayResult out;
  std::size_t next = 0;
  double now = arrivals.empty() ? 0 : arrivals.front().time;
  while (next < arrivals.size() || engine.has_work()) {
    for (; next < arrivals.size() && arrivals[next].time <= now; ++next) {
      Arrival& a = arrivals[next];
      const RequestId id = a.request.id;
      if (!engine.submit(std::move(a.request), a.time)) out.rejected.push_back(id);
    }
    if (!engine.has_work()) {
      now = std::max(now, arrivals[next].time);
      continue;
    }
    const StepResult& step = engine.step(now);
    if (step.scheduled_seqs == 0) {
      if (next == arrivals.size()) break;  // stalled for good
      now = std::max(now, arrivals[next].time);
      continue;
    }
    for (const RequestEvent& e : step.events) {
      if (e.finished) out.completed.push_back({e.id, e.tokens_generated, e.timing});
    }
    now = step.end();
  }
  out.end_time = now;
  return out;
}

}  // namespace arbiter::engine
