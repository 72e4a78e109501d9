// The operator's log line for a backend's health changes
// (gateway/engine_signal_log.hpp).
#include "gateway/engine_signal_log.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace arbiter::test {
namespace {

using namespace std::chrono_literals;

sched::BackendSignal health(bool stale, bool down, bool saturated = false) {
  sched::BackendSignal s;
  s.stale = stale;
  s.down = down;
  s.saturated = saturated;
  return s;
}

boost::json::object parse(const std::optional<std::string>& line) {
  EXPECT_TRUE(line.has_value());
  if (line) {
    EXPECT_FALSE(line->ends_with('\n')) << "one line, its newline the writer's";
  }
  return line ? boost::json::parse(*line).as_object() : boost::json::object{};
}

TEST(EngineSignalLog, SaysNothingWhileTheHealthStaysTheSame) {
  const MonitorState state;
  const sched::TimePoint now{10s};
  EXPECT_FALSE(
      engine_signal_line("a", health(false, false), health(false, false, true), state, "", now))
      << "saturation follows load: counted, not logged";
  EXPECT_FALSE(
      engine_signal_line("a", health(true, true), health(true, true, true), state, "timeout", now));
  sched::BackendSignal limited = health(false, false);
  limited.max_in_flight = 8;  // a new verdict (slow start), the same health
  EXPECT_FALSE(engine_signal_line("a", health(false, false), limited, state, "", now));
}

TEST(EngineSignalLog, ADownBackendSaysWhyAndForHowLong) {
  MonitorState state;
  state.last_answer = sched::TimePoint{2s};
  state.consecutive_failures = 3;
  state.refused = true;
  const auto o = parse(engine_signal_line("gpu-7", health(false, false), health(false, true), state,
                                          "connect", sched::TimePoint{2350ms}));
  EXPECT_EQ(o.at("level"), "warn");
  EXPECT_EQ(o.at("event"), "engine_signal");
  EXPECT_EQ(o.at("backend"), "gpu-7");
  EXPECT_EQ(o.at("from"), "up");
  EXPECT_EQ(o.at("to"), "down");
  EXPECT_EQ(o.at("silent_ms"), 350);
  EXPECT_EQ(o.at("failed_scrapes_in_row"), 3);
  EXPECT_EQ(o.at("refused"), true);
  EXPECT_EQ(o.at("why"), "connect");
}

TEST(EngineSignalLog, StaleByTimeAloneSaysSo) {
  MonitorState state;
  state.last_answer = sched::TimePoint{1s};
  const auto o = parse(engine_signal_line("b", health(false, false), health(true, false), state, "",
                                          sched::TimePoint{3100ms}));
  EXPECT_EQ(o.at("level"), "warn");
  EXPECT_EQ(o.at("to"), "stale");
  EXPECT_EQ(o.at("why"), "no fresh figures");
  EXPECT_EQ(o.at("failed_scrapes_in_row"), 0);
}

TEST(EngineSignalLog, BackUpIsInfoWithoutAReason) {
  MonitorState state;
  state.last_answer = sched::TimePoint{5s};
  const auto up = parse(engine_signal_line("c", health(true, true), health(false, false), state, "",
                                           sched::TimePoint{5s}));
  EXPECT_EQ(up.at("level"), "info");
  EXPECT_EQ(up.at("from"), "down");
  EXPECT_EQ(up.at("to"), "up");
  EXPECT_FALSE(up.contains("why"));
  EXPECT_FALSE(up.contains("failed_scrapes_in_row"));
  // Down to stale (it answers again, without figures yet) is better: info.
  const auto better = parse(engine_signal_line("c", health(true, true), health(true, false), state,
                                               "status", sched::TimePoint{5s}));
  EXPECT_EQ(better.at("level"), "info");
  EXPECT_EQ(better.at("why"), "status");
}

TEST(EngineSignalLog, EscapesTheConfiguredName) {
  const auto o =
      parse(engine_signal_line("a \"quoted\"\\name\n", health(false, false), health(false, true),
                               MonitorState{}, "timeout", sched::TimePoint{1s}));
  EXPECT_EQ(o.at("backend"), "a \"quoted\"\\name\n");
}

}  // namespace
}  // namespace arbiter::test
