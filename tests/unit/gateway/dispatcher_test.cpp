// The Dispatcher (the scheduler behind its lock, waking request
// coroutines) with test sinks standing in for clients: a request waits for
// a free slot and gets it when the holder's slot ends; a client that goes
// away while queued is dequeued and never dispatched.
#include "gateway/dispatch/dispatcher.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../core/scheduler_test_util.hpp"
#include "recording_sink.hpp"

namespace arbiter {
namespace {

using testing::RecordingSink;

struct Rig {
  net::io_context ioc;
  net::strand<net::io_context::executor_type> strand = net::make_strand(ioc);
  std::unique_ptr<Dispatcher> dispatcher;
  std::vector<std::string> events;

  Rig() {
    // One backend with one slot, one class.
    auto config = sched::testing::one_pool({sched::testing::named("chat")}, {1});
    dispatcher = std::make_unique<Dispatcher>(*sched::Scheduler::create(config), strand);
    dispatcher->start();
  }
  ~Rig() { dispatcher->stop(); }

  // A request that holds its slot for `hold`, then ends.
  Task<void> request(std::string name, RecordingSink& sink, std::chrono::milliseconds hold) {
    auto slot = co_await dispatcher->acquire(sched::Request{.cost_tokens = 10}, sink);
    if (!slot) {
      events.push_back(name + " refused: " + slot.error().message);
      co_return;
    }
    events.push_back(name + " started");
    net::steady_timer timer(co_await net::this_coro::executor, hold);
    co_await timer.async_wait(kAsTuple);
    events.push_back(name + " ended");
  }

  void spawn(Task<void> t) { net::co_spawn(ioc, std::move(t), net::detached); }
  void run_for(std::chrono::milliseconds d) {
    ioc.run_for(d);
    ioc.restart();
  }
};

TEST(Dispatcher, AWaitingRequestGetsTheSlotWhenItsHolderEnds) {
  Rig r;
  RecordingSink a, b;
  r.spawn(r.request("a", a, std::chrono::milliseconds(50)));
  r.spawn(r.request("b", b, std::chrono::milliseconds(1)));
  r.run_for(std::chrono::milliseconds(200));
  EXPECT_EQ(r.events, (std::vector<std::string>{"a started", "a ended", "b started", "b ended"}));
}

TEST(Dispatcher, AClientGoneWhileQueuedIsDequeuedAndNeverDispatched) {
  Rig r;
  RecordingSink a, b, c;
  r.spawn(r.request("a", a, std::chrono::milliseconds(100)));
  r.spawn(r.request("b", b, std::chrono::milliseconds(1)));
  r.spawn(r.request("c", c, std::chrono::milliseconds(1)));
  r.run_for(std::chrono::milliseconds(20));
  uint32_t queued = 0;
  r.dispatcher->inspect([&](const sched::Scheduler& s) { queued = s.queue_depth(0, 0); });
  EXPECT_EQ(queued, 2u);
  b.leave();  // b's client disconnects while it waits
  r.run_for(std::chrono::milliseconds(200));
  ASSERT_EQ(r.events.size(), 5u) << ::testing::PrintToString(r.events);
  EXPECT_EQ(r.events[0], "a started");
  EXPECT_TRUE(r.events[1].starts_with("b refused")) << r.events[1];
  EXPECT_EQ(r.events[2], "a ended");
  EXPECT_EQ(r.events[3], "c started");
  r.dispatcher->inspect([&](const sched::Scheduler& s) {
    EXPECT_EQ(s.queued(), 0u);
    EXPECT_EQ(s.counters().total().cancelled_queued, 1u);
  });
}

}  // namespace
}  // namespace arbiter
