// The backend monitor against scripted engines on loopback: it follows the
// /metrics body (saturated by queue and by KV, clear again), reports stale
// then down when the engine stops answering and clear when it is back, keeps
// one keep-alive connection, and stops promptly. Timing bounds are generous:
// the machine running the tests is shared.
#include "gateway/backend_monitor.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/fake_upstream.hpp"
#include "support/raw_socket.hpp"

namespace arbiter::test {
namespace {

using namespace std::chrono_literals;

// A vLLM body with these gauges (plus families the monitor must skip).
std::string vllm_body(double waiting, double running, double kv) {
  const std::string labels = "{engine=\"0\",model_name=\"m1\"}";
  std::string body;
  body += "# HELP vllm:num_requests_running Number of requests in model execution batches.\n";
  body += "# TYPE vllm:num_requests_running gauge\n";
  body += "vllm:num_requests_running" + labels + " " + std::to_string(running) + "\n";
  body += "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n";
  body += "# TYPE vllm:num_requests_waiting gauge\n";
  body += "vllm:num_requests_waiting" + labels + " " + std::to_string(waiting) + "\n";
  body += "# TYPE vllm:kv_cache_usage_perc gauge\n";
  body += "vllm:kv_cache_usage_perc" + labels + " " + std::to_string(kv) + "\n";
  body += "# TYPE vllm:time_to_first_token_seconds histogram\n";
  body += "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m1\"} 12.0\n";
  body += "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m1\"} 12.0\n";
  return body;
}

// A fake engine whose GET /metrics answer the test changes at will.
class ScriptedEngine {
 public:
  ScriptedEngine() {
    upstream_.set_handler([this](const RecordedRequest&) {
      std::lock_guard lock(mu_);
      return behaviour_;
    });
  }

  void answer(std::string body, int status = 200) {
    Respond r;
    r.status = status;
    r.body = std::move(body);
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    set(r);
  }
  void set(Behaviour behaviour) {
    std::lock_guard lock(mu_);
    behaviour_ = std::move(behaviour);
  }

  FakeUpstream& upstream() { return upstream_; }
  MonitorTarget target(uint32_t pool, uint32_t backend) const {
    MonitorTarget t;
    t.pool = pool;
    t.backend = backend;
    t.host = "127.0.0.1";
    t.port = upstream_.port();
    t.name = "127.0.0.1:" + std::to_string(upstream_.port());
    return t;
  }

 private:
  std::mutex mu_;
  Behaviour behaviour_ = Hang{};
  FakeUpstream upstream_;  // declared last: its threads stop before the script goes
};

// One callback.
struct Event {
  uint32_t pool = 0;
  uint32_t backend = 0;
  sched::BackendSignal signal;
  EngineLoad load;
  TimePoint at{};
};

std::string describe(const Event& e) {
  return "(" + std::to_string(e.pool) + "," + std::to_string(e.backend) + ") saturated=" +
         std::to_string(e.signal.saturated) + " stale=" + std::to_string(e.signal.stale) +
         " down=" + std::to_string(e.signal.down);
}

// A monitor on its own io_context and thread, recording every callback that
// changes a backend's verdict (saturated, stale, down); callbacks that only
// bring a new running count are counted apart. The thread runs the
// io_context without a work guard, so it ends exactly when the monitor has
// nothing left pending.
bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// The monitor's log lines (MonitorOptions::log), from its strand.
class LogLines {
 public:
  void add(std::string_view line) {
    std::lock_guard lock(mu_);
    lines_.emplace_back(line);
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::string describe() const {
    std::string out = "logged:\n";
    for (const std::string& l : lines()) out += "  " + l + "\n";
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

class MonitorRun {
 public:
  MonitorRun(std::vector<MonitorTarget> targets, MonitorOptions options,
             std::function<void(const Event&, BackendMonitor&)> hook = {})
      : hook_(std::move(hook)) {
    monitor_.emplace(ioc_.get_executor(), std::move(targets), std::move(options),
                     [this](uint32_t pool, uint32_t backend, const sched::BackendSignal& signal,
                            const EngineLoad& load) {
                       Event e{pool, backend, signal, load, Clock::now()};
                       {
                         std::lock_guard lock(mu_);
                         sched::BackendSignal& last = verdicts_[{pool, backend}];
                         last_running_ = signal.engine_running;
                         const bool verdict = !sched::same_verdict(signal, last);
                         last = signal;
                         if (!verdict) {
                           ++load_updates_;
                           return;
                         }
                         events_.push_back(e);
                       }
                       cv_.notify_all();
                       if (hook_) hook_(e, *monitor_);
                     });
    started_at_ = Clock::now();
    monitor_->start();
    thread_ = std::thread([this] {
      ioc_.run();
      finished_.set_value();
    });
  }

  ~MonitorRun() {
    if (thread_.joinable()) stop_and_join(10s);
  }

  BackendMonitor& monitor() { return *monitor_; }
  TimePoint started_at() const { return started_at_; }

  // The next callback (after those already taken) matching `pred`; earlier
  // non-matching ones are skipped. nullopt on timeout.
  std::optional<Event> wait_for(const std::function<bool(const Event&)>& pred, Millis timeout) {
    std::unique_lock lock(mu_);
    std::optional<Event> found;
    cv_.wait_for(lock, timeout, [&] {
      while (cursor_ < events_.size()) {
        const Event& e = events_[cursor_++];
        if (pred(e)) {
          found = e;
          return true;
        }
      }
      return false;
    });
    return found;
  }

  std::vector<Event> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

  // Callbacks that only brought a new running count, and the last one given.
  std::size_t load_updates() const {
    std::lock_guard lock(mu_);
    return load_updates_;
  }
  uint32_t last_running() const {
    std::lock_guard lock(mu_);
    return last_running_;
  }

  std::string describe_events() const {
    std::string out;
    for (const auto& e : events()) {
      out += describe(e) + " at +" + std::to_string(static_cast<long>(ms_between(started_at_, e.at))) +
             "ms\n";
    }
    return out;
  }

  // The snapshot of one backend.
  BackendSnapshot backend(std::size_t index) const { return monitor_->snapshot().at(index); }

  // Stops the monitor and checks that the io_context runs out of work by
  // itself within `timeout`; forces it down otherwise.
  bool stop_and_join(Millis timeout) {
    monitor_->stop();
    const bool ended = finished_.get_future().wait_for(timeout) == std::future_status::ready;
    if (!ended) ioc_.stop();
    thread_.join();
    return ended;
  }

 private:
  boost::asio::io_context ioc_;
  std::optional<BackendMonitor> monitor_;  // declared after the io_context: destroyed before it
  std::function<void(const Event&, BackendMonitor&)> hook_;
  std::thread thread_;
  std::promise<void> finished_;
  TimePoint started_at_{};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> events_;
  std::size_t cursor_ = 0;
  std::map<std::pair<uint32_t, uint32_t>, sched::BackendSignal> verdicts_;  // last per backend
  std::size_t load_updates_ = 0;
  uint32_t last_running_ = 0;
};

// Waits until `pred` holds for backend `index`'s snapshot.
bool wait_snapshot(MonitorRun& run, std::size_t index,
                   const std::function<bool(const BackendSnapshot&)>& pred, Millis timeout) {
  const auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    if (pred(run.backend(index))) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred(run.backend(index));
}

bool clear(const sched::BackendSignal& s) { return !s.saturated && !s.stale && !s.down; }
bool is_clear(const Event& e) { return clear(e.signal); }
bool is_saturated(const Event& e) { return e.signal.saturated; }
bool is_stale(const Event& e) { return e.signal.stale; }
bool is_down(const Event& e) { return e.signal.down; }


MonitorOptions fast_options() {
  MonitorOptions o;
  o.interval = 50ms;
  o.max_backoff = 200ms;
  return o;
}

TEST(BackendMonitor, FollowsSaturationThenStaleDownAndBack) {
  ScriptedEngine engine;
  engine.answer(vllm_body(0, 2, 0.2));
  MonitorOptions options = fast_options();
  options.timeout = 1000ms;  // three hung scrapes take ~3 s: stale (2 s) comes first
  // Scrapes that only time out: down once the engine has been silent 3 s.
  options.rules.silence_before_down = 3s;
  // What an operator reads: the health changes, not the saturation flaps.
  auto logged = std::make_shared<LogLines>();
  options.log = [logged](std::string_view line) { logged->add(line); };
  MonitorRun run({engine.target(0, 3)}, options);

  ASSERT_TRUE(wait_snapshot(run, 0, [](const auto& b) { return b.counters.scrapes_ok >= 3; }, 5s))
      << engine.upstream().describe();
  {
    const auto b = run.backend(0);
    EXPECT_TRUE(clear(b.signal));
    EXPECT_EQ(b.state.load.flavour, EngineFlavour::kVllm);
    EXPECT_EQ(b.state.load.waiting, 0.0);
    EXPECT_EQ(b.state.load.running, 2.0);
    EXPECT_EQ(b.state.load.kv_usage, 0.2);
    EXPECT_TRUE(run.events().empty()) << "no change from the default, no callback:\n"
                                      << run.describe_events();
    // The running count is passed on (prefix affinity bounds load by it).
    EXPECT_EQ(run.load_updates(), 1u);
    EXPECT_EQ(run.last_running(), 2u);
  }

  // The engine queues: saturated.
  engine.answer(vllm_body(3, 8, 0.5));
  auto e = run.wait_for(is_saturated, 5s);
  ASSERT_TRUE(e) << run.describe_events();
  EXPECT_EQ(e->pool, 0u);
  EXPECT_EQ(e->backend, 3u);
  EXPECT_EQ(e->load.waiting, 3.0);
  EXPECT_FALSE(e->signal.stale || e->signal.down);

  engine.answer(vllm_body(0, 8, 0.5));
  ASSERT_TRUE(run.wait_for(is_clear, 5s)) << run.describe_events();

  // KV cache nearly full: saturated without a queue.
  engine.answer(vllm_body(0, 8, 0.95));
  e = run.wait_for(is_saturated, 5s);
  ASSERT_TRUE(e) << run.describe_events();
  EXPECT_EQ(e->load.kv_usage, 0.95);

  engine.answer(vllm_body(0, 2, 0.2));
  ASSERT_TRUE(run.wait_for(is_clear, 5s)) << run.describe_events();

  // The engine stops answering: stale about 2 s after its last answer, then
  // down once three scrapes in a row have timed out and it has been silent 3 s.
  engine.set(Hang{});
  const auto hung_at = Clock::now();
  e = run.wait_for(is_stale, 8s);
  ASSERT_TRUE(e) << run.describe_events() << engine.upstream().describe();
  // Not before its 2 s (a lower bound: a loaded machine only makes it later),
  // and before it is down (the order, not a clock, says it came in time).
  EXPECT_GE(ms_between(hung_at, e->at), 1800) << run.describe_events();
  EXPECT_FALSE(e->signal.down) << "two 1 s timeouts at most by then";
  EXPECT_FALSE(e->signal.saturated);

  e = run.wait_for(is_down, 10s);
  ASSERT_TRUE(e) << run.describe_events() << engine.upstream().describe();
  EXPECT_GE(ms_between(hung_at, e->at), 2900) << run.describe_events();
  {
    const auto b = run.backend(0);
    EXPECT_TRUE(b.signal.down && b.signal.stale);
    EXPECT_GE(b.counters.scrapes_failed, 3u);
    EXPECT_EQ(b.last_failure, "timeout");
  }

  // Back: clear again (the next attempt follows the current timeout, then a
  // short backoff).
  engine.answer(vllm_body(0, 1, 0.1));
  e = run.wait_for(is_clear, 10s);
  ASSERT_TRUE(e) << run.describe_events() << engine.upstream().describe();
  EXPECT_EQ(e->load.running, 1.0);

  ASSERT_TRUE(run.stop_and_join(5s)) << "the io_context did not run out of work after stop()";
  const auto b = run.backend(0);  // snapshots stay readable after stop()
  EXPECT_EQ(b.counters.saturated_transitions, 2u) << run.describe_events();
  EXPECT_EQ(b.counters.stale_transitions, 1u) << run.describe_events();
  EXPECT_EQ(b.counters.down_transitions, 1u) << run.describe_events();
  EXPECT_EQ(run.events().size(), 7u) << run.describe_events();  // 4 saturation, stale, down, back
  const std::vector<std::string> lines = logged->lines();
  ASSERT_EQ(lines.size(), 3u) << logged->describe();
  EXPECT_TRUE(contains(lines[0], R"("level":"warn","event":"engine_signal","backend":"127.0.0.1:)")) << lines[0];
  EXPECT_TRUE(contains(lines[0], R"("from":"up","to":"stale")")) << lines[0];
  EXPECT_TRUE(contains(lines[0], R"("why":"timeout")")) << lines[0] << " (a scrape had timed out by then)";
  EXPECT_TRUE(contains(lines[1], R"("from":"stale","to":"down")")) << lines[1];
  EXPECT_TRUE(contains(lines[1], R"("refused":false,"why":"timeout")")) << lines[1];
  EXPECT_TRUE(contains(lines[2], R"("level":"info","event":"engine_signal")")) << lines[2];
  EXPECT_TRUE(contains(lines[2], R"("from":"down","to":"up")")) << lines[2];
  EXPECT_FALSE(contains(lines[2], "why")) << lines[2];

  // Every request was a GET /metrics; the healthy phase used one connection.
  const auto requests = engine.upstream().requests();
  for (const auto& r : requests) {
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.target, "/metrics");
  }
  const auto connections = engine.upstream().connections();
  ASSERT_GE(connections.size(), 2u);  // the hung ones were closed and replaced
  EXPECT_GE(connections[0].requests, 5u) << engine.upstream().describe();
}

// An engine under load that renders /metrics in 1.5 s (SGLang's has been
// seen taking seconds) while it serves: its scrapes pass the 500 ms deadline
// at first, so it goes stale, but the deadline grows until its answers come
// in time and then stays above what they take, so its figures are fresh
// again, and it is never called down. (With the deadline fixed and every
// timeout counted it was down after ~1.5 s, and a fleet under load read
// "every backend is down".)
TEST(BackendMonitor, AnEngineSlowToAnswerItsMetricsIsStaleNotDown) {
  ScriptedEngine engine;
  Respond slow;
  slow.body = vllm_body(0, 2, 0.2);
  slow.content_type = "text/plain; version=0.0.4; charset=utf-8";
  slow.header_delay = 1500ms;
  engine.set(slow);
  MonitorOptions options = fast_options();
  options.timeout = 500ms;
  options.rules.stale_after = 2s;  // above the engine's pace, below its first answer (~3 s)
  MonitorRun run({engine.target(0, 0)}, options);
  ASSERT_TRUE(run.wait_for(is_stale, 5s)) << run.describe_events();
  // Answers come through once the deadline has grown past 1.5 s, and keep
  // coming: fresh again.
  ASSERT_TRUE(wait_snapshot(run, 0, [](const auto& b) { return b.counters.scrapes_ok >= 3; }, 15s))
      << run.describe_events() << engine.upstream().describe();
  const auto answered = run.backend(0).counters;
  ASSERT_TRUE(wait_snapshot(run, 0, [&](const auto& b) { return b.counters.scrapes_ok >= answered.scrapes_ok + 3; },
                            10s))
      << run.describe_events();
  EXPECT_EQ(run.backend(0).counters.scrapes_failed, answered.scrapes_failed)
      << "after its first answer every scrape waits long enough";
  EXPECT_TRUE(run.wait_for(is_clear, 5s)) << run.describe_events();
  EXPECT_EQ(run.backend(0).counters.down_transitions, 0u) << run.describe_events();
  for (const Event& e : run.events()) EXPECT_FALSE(e.signal.down) << run.describe_events();
  ASSERT_TRUE(run.stop_and_join(5s));
}

TEST(BackendMonitor, CountsTransitionsAndScrapes) {
  ScriptedEngine engine;
  engine.answer(vllm_body(1, 1, 0.1));  // saturated from the first scrape
  MonitorRun run({engine.target(1, 0)}, fast_options());
  ASSERT_TRUE(run.wait_for(is_saturated, 5s));
  engine.answer(vllm_body(0, 1, 0.1));
  ASSERT_TRUE(run.wait_for(is_clear, 5s));
  engine.answer("Not Found", 404);  // answered: up, but its figures age
  ASSERT_TRUE(run.wait_for(is_stale, 8s)) << run.describe_events();
  const auto b = run.backend(0);
  EXPECT_FALSE(b.signal.down);
  EXPECT_EQ(b.last_failure, "status");
  EXPECT_GE(b.counters.scrapes_unusable, 5u);
  EXPECT_EQ(b.counters.scrapes_failed, 0u);
  EXPECT_GE(b.counters.scrapes_ok, 2u);
  EXPECT_EQ(b.counters.connects, 1u) << engine.upstream().describe();
  EXPECT_EQ(b.counters.saturated_transitions, 1u);
  EXPECT_EQ(b.counters.stale_transitions, 1u);
  EXPECT_EQ(b.counters.down_transitions, 0u);

  // 503 (an engine still loading) counts as no answer.
  engine.answer("{\"error\":{\"code\":503,\"message\":\"Loading model\"}}", 503);
  ASSERT_TRUE(run.wait_for(is_down, 5s)) << run.describe_events();
  const auto totals = run.monitor().totals();
  EXPECT_EQ(totals.down_transitions, 1u);
  EXPECT_GE(totals.scrapes_failed, 3u);
  ASSERT_TRUE(run.stop_and_join(5s));
}

TEST(BackendMonitor, RefusedConnectionsGoDownFast) {
  MonitorTarget target;
  target.pool = 0;
  target.backend = 0;
  target.host = "127.0.0.1";
  const ClosedPort closed;  // nothing listens, and the port stays ours for the whole test
  target.port = closed.port();
  MonitorRun run({target}, fast_options());
  auto e = run.wait_for(is_down, 5s);
  ASSERT_TRUE(e) << run.describe_events();
  // Fast: down on three refusals, before the start's 2 s grace period ends
  // (stale comes after it), not after a scrape timeout.
  EXPECT_FALSE(e->signal.stale) << "within the start's grace period";
  e = run.wait_for(is_stale, 6s);
  ASSERT_TRUE(e) << run.describe_events();
  EXPECT_TRUE(e->signal.down);
  EXPECT_GE(ms_between(run.started_at(), e->at), 1900);
  const auto b = run.backend(0);
  EXPECT_EQ(b.last_failure, "connect");
  EXPECT_EQ(b.counters.scrapes_ok, 0u);
  EXPECT_EQ(b.counters.connects, 0u);
  // Backoff: attempts slow down to max_backoff (200 ms), not every 50 ms.
  EXPECT_LE(b.counters.scrapes_failed, 25u);
  ASSERT_TRUE(run.stop_and_join(5s));
}

TEST(BackendMonitor, WatchesSeveralEnginesSeparately) {
  ScriptedEngine sglang;
  sglang.answer(
      "# TYPE sglang:num_queue_reqs gauge\n"
      "sglang:num_queue_reqs{model_name=\"q\"} 4.0\n"
      "sglang:num_running_reqs{model_name=\"q\"} 12.0\n"
      "sglang:token_usage{model_name=\"q\"} 0.4\n");
  ScriptedEngine llama;
  llama.answer("llamacpp:requests_processing 2\nllamacpp:requests_deferred 0\n");
  MonitorRun run({sglang.target(0, 1), llama.target(2, 0)}, fast_options());

  auto e = run.wait_for(is_saturated, 5s);
  ASSERT_TRUE(e) << run.describe_events();
  EXPECT_EQ(e->pool, 0u);
  EXPECT_EQ(e->backend, 1u);
  EXPECT_EQ(e->load.flavour, EngineFlavour::kSglang);
  EXPECT_EQ(e->load.waiting, 4.0);

  ASSERT_TRUE(wait_snapshot(run, 1, [](const auto& b) { return b.counters.scrapes_ok >= 2; }, 5s));
  const auto b = run.backend(1);
  EXPECT_EQ(b.pool, 2u);
  EXPECT_EQ(b.state.load.flavour, EngineFlavour::kLlamaCpp);
  EXPECT_EQ(b.state.load.running, 2.0);
  EXPECT_TRUE(clear(b.signal));

  llama.answer("llamacpp:requests_processing 4\nllamacpp:requests_deferred 2\n");
  e = run.wait_for(is_saturated, 5s);
  ASSERT_TRUE(e) << run.describe_events();
  EXPECT_EQ(e->pool, 2u);
  EXPECT_EQ(e->backend, 0u);
  for (const auto& ev : run.events()) EXPECT_FALSE(ev.signal.stale || ev.signal.down) << describe(ev);
  ASSERT_TRUE(run.stop_and_join(5s));
}

TEST(BackendMonitor, ReopensConnectionsTheEngineCloses) {
  ScriptedEngine engine;
  Respond closing;
  closing.body = vllm_body(0, 1, 0.1);
  closing.close_after = true;  // Connection: close on every answer
  engine.set(closing);
  MonitorRun run({engine.target(0, 0)}, fast_options());
  ASSERT_TRUE(wait_snapshot(run, 0, [](const auto& b) { return b.counters.scrapes_ok >= 5; }, 5s));
  // Kept alive from now on; once the connection has been reused a few times
  // the engine drops it without answering, which is retried at once on a
  // fresh one: no failed scrape.
  engine.answer(vllm_body(0, 1, 0.1));
  ASSERT_TRUE(wait_snapshot(run, 0, [](const auto& b) { return b.counters.scrapes_ok >= 10; }, 5s));
  const auto before = engine.upstream().total_connections();
  engine.upstream().push(CloseImmediately{});
  ASSERT_TRUE(wait_snapshot(run, 0, [](const auto& b) { return b.counters.scrapes_ok >= 20; }, 5s));
  EXPECT_EQ(engine.upstream().total_connections(), before + 1) << engine.upstream().describe();
  ASSERT_TRUE(run.stop_and_join(5s));
  const auto b = run.backend(0);
  EXPECT_EQ(b.counters.scrapes_failed, 0u) << engine.upstream().describe();
  EXPECT_EQ(b.counters.connects, engine.upstream().total_connections());
  EXPECT_TRUE(run.events().empty()) << run.describe_events();
}

TEST(BackendMonitor, StopEndsAHungScrapeAtOnce) {
  ScriptedEngine engine;  // hangs
  MonitorOptions options = fast_options();
  options.timeout = 10'000ms;
  MonitorRun run({engine.target(0, 0)}, options);
  ASSERT_TRUE(engine.upstream().wait_for_requests(1, 5s));
  const auto stop_at = Clock::now();
  ASSERT_TRUE(run.stop_and_join(3s)) << "stop() must not wait for the 10 s scrape deadline";
  EXPECT_LT(ms_between(stop_at, Clock::now()), 3000);
  EXPECT_TRUE(engine.upstream().wait_for_no_open_connections(5s)) << engine.upstream().describe();
}

TEST(BackendMonitor, DestroyedWhileItsIoContextRuns) {
  ScriptedEngine engine;
  engine.answer(vllm_body(1, 1, 0.1));
  boost::asio::io_context ioc;
  std::vector<MonitorTarget> targets{engine.target(0, 0)};
  auto monitor = std::make_unique<BackendMonitor>(
      ioc.get_executor(), std::move(targets), fast_options(),
      [](uint32_t, uint32_t, const sched::BackendSignal&, const EngineLoad&) {});
  monitor->start();
  std::promise<void> done;
  auto ended = done.get_future();
  std::thread thread([&] {
    ioc.run();
    done.set_value();
  });
  EXPECT_TRUE(engine.upstream().wait_for_requests(3, 5s));  // no ASSERT: the thread must be joined
  monitor.reset();  // the loops are mid-flight on the other thread
  const bool finished = ended.wait_for(5s) == std::future_status::ready;
  if (!finished) ioc.stop();
  thread.join();
  EXPECT_TRUE(finished) << "the loops must end by themselves once the monitor is gone";
}

TEST(BackendMonitor, StopFromInsideTheCallback) {
  ScriptedEngine engine;
  engine.answer(vllm_body(2, 1, 0.1));
  int calls = 0;  // the callback runs on the monitor's thread only
  MonitorRun run({engine.target(0, 0)}, fast_options(), [&](const Event&, BackendMonitor& monitor) {
    ++calls;
    monitor.stop();  // must neither deadlock nor call back again
  });
  ASSERT_TRUE(run.wait_for(is_saturated, 5s));
  ASSERT_TRUE(run.stop_and_join(5s));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace arbiter::test
