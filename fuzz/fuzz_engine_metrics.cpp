// An engine's /metrics text as the backend monitor reads it
// (core/engine_metrics: parse_engine_load, then the verdict). Properties:
// - CRLF line ends read as LF ones;
// - the figures are numbers (no NaN), the KV use a finite one;
// - the verdict of a scrape with these figures is one of the four.
#include <cmath>
#include <string>

#include "core/engine_metrics.hpp"
#include "fuzz_check.hpp"

namespace arbiter {
namespace {

void check_metrics(std::string_view body) {
  const EngineLoad load = parse_engine_load(body);
  if (load.waiting) FUZZ_CHECK(!std::isnan(*load.waiting));
  if (load.running) FUZZ_CHECK(!std::isnan(*load.running));
  if (load.kv_usage) FUZZ_CHECK(std::isfinite(*load.kv_usage));
  if (load.kv_cache_tokens) FUZZ_CHECK(*load.kv_cache_tokens > 0);
  FUZZ_CHECK(load.has_figures() == (load.waiting || load.running || load.kv_usage));

  if (body.find('\r') == std::string_view::npos) {
    std::string crlf;
    for (const char c : body) {
      if (c == '\n') crlf += '\r';
      crlf += c;
    }
    FUZZ_CHECK(parse_engine_load(crlf) == load);
  }

  MonitorState state;
  const sched::TimePoint now{};
  record_scrape(state, classify_answer(200, load), load, now);
  const sched::BackendSignal signal = judge(state, now + std::chrono::milliseconds(100), SignalRules{});
  (void)signal;
}

}  // namespace
}  // namespace arbiter

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  arbiter::check_metrics({reinterpret_cast<const char*>(data), size});
  return 0;
}
