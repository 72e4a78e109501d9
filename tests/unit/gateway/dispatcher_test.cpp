// The Dispatcher (the scheduler behind its lock, waking request
// coroutines) with test sinks standing in for clients: a request waits for
// a free slot and gets it when the holder's slot ends; a client that goes
// away while queued is dequeued and never dispatched; a running request
// superseded before it asks to run again (after a preemption or a failed
// run) is answered superseded, and its generation, being stopped, is not
// offered to the newer one (typing through).
#include "gateway/dispatch/dispatcher.hpp"

#include "gateway/relay/typing_handover.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../core/scheduler_test_util.hpp"
#include "recording_sink.hpp"

namespace arbiter::dispatcher_test {
namespace {

using testing::RecordingSink;

struct Rig {
  net::io_context ioc;
  net::strand<net::io_context::executor_type> strand = net::make_strand(ioc);
  std::unique_ptr<Dispatcher> dispatcher;
  std::vector<std::string> events;
  // Holds a test's request mid-run until the test cancels it.
  net::steady_timer gate{ioc, net::steady_timer::time_point::max()};

  Rig() {
    // One backend with one slot, one class.
    auto config = sched::testing::one_pool({sched::testing::named("chat")}, {1});
    dispatcher = std::make_unique<Dispatcher>(*sched::Scheduler::create(config), nullptr, strand);
    dispatcher->start();
  }
  ~Rig() { dispatcher->stop(); }

  // A request that holds its slot for `hold`, then ends.
  Task<void> request(std::string name, RecordingSink& sink, std::chrono::milliseconds hold,
                     std::string_view supersede_key = {}) {
    auto slot = co_await dispatcher->acquire(sched::Request{.cost_tokens = 10, .supersede_key = supersede_key}, sink,
                                             dispatcher->epoch());
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
  r.dispatcher->inspect(r.dispatcher->epoch(), [&](const sched::Scheduler& s) { queued = s.queue_depth(0, 0); });
  EXPECT_EQ(queued, 2u);
  b.leave();  // b's client disconnects while it waits
  r.run_for(std::chrono::milliseconds(200));
  ASSERT_EQ(r.events.size(), 5u) << ::testing::PrintToString(r.events);
  EXPECT_EQ(r.events[0], "a started");
  EXPECT_TRUE(r.events[1].starts_with("b refused")) << r.events[1];
  EXPECT_EQ(r.events[2], "a ended");
  EXPECT_EQ(r.events[3], "c started");
  r.dispatcher->inspect(r.dispatcher->epoch(), [&](const sched::Scheduler& s) {
    EXPECT_EQ(s.queued(), 0u);
    EXPECT_EQ(s.counters().total().cancelled_queued, 1u);
  });
}

TEST(Dispatcher, ARequestSupersededWhileItsRunEndsIsAnsweredSupersededWhenItAsksToRunAgain) {
  // The newer request's supersede reaches the old one between the end of
  // its run (failed here; a preemption takes the same path) and its
  // requeue: the requeue is refused as superseded, not as a broken state.
  Rig r;
  RecordingSink old_sink, new_sink;
  std::string requeue_error;
  bool interrupted = false;
  auto old_request = [&]() -> Task<void> {
    auto slot = co_await r.dispatcher->acquire(sched::Request{.cost_tokens = 10, .supersede_key = "k"}, old_sink,
                                               r.dispatcher->epoch());
    if (!slot) co_return;
    slot->set_interrupt_hook([&] { interrupted = true; });
    r.events.push_back("old started");
    co_await r.gate.async_wait(kAsTuple);  // meanwhile the newer request arrives
    slot->set_interrupt_hook(nullptr);
    auto again = co_await slot->retry(5, old_sink);
    r.events.push_back(again ? "old runs again" : "old refused");
    if (!again) requeue_error = std::string(map_error(again.error().code).code);
  };
  r.spawn(old_request());
  r.run_for(std::chrono::milliseconds(10));
  r.spawn(r.request("new", new_sink, std::chrono::milliseconds(1), "k"));
  r.run_for(std::chrono::milliseconds(10));
  r.gate.cancel();
  r.run_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(interrupted);
  EXPECT_EQ(requeue_error, "superseded");
  EXPECT_EQ(r.events, (std::vector<std::string>{"old started", "old refused", "new started", "new ended"}));
  r.dispatcher->inspect(r.dispatcher->epoch(), [&](const sched::Scheduler& s) {
    EXPECT_EQ(s.queued(), 0u);
    EXPECT_EQ(s.in_flight(), 0u);
  });
}

TEST(Dispatcher, APreemptedRunsGenerationIsNotInheritedAndItsClientIsAnsweredSuperseded) {
  // A background completion typing through, preempted by standard work;
  // before it is requeued a keystroke types along its published text. The
  // keystroke must not claim a generation whose run is being stopped: it
  // queues for a run of its own, and the victim is answered superseded.
  net::io_context ioc;
  sched::ClassPolicy bg = sched::testing::named("bg");
  bg.background = true;
  bg.typing_through = true;
  auto config = sched::testing::one_pool({sched::testing::named("std"), bg}, {1});
  config.preempt_after = sched::Duration::zero();
  Dispatcher dispatcher(*sched::Scheduler::create(config), nullptr, ioc.get_executor());
  dispatcher.start();
  auto offer = [&](std::string prompt) {
    return std::make_shared<TypingOffer>(std::move(prompt), "m1", 64, "", true, &ioc, ioc.get_executor());
  };
  const auto old_offer = offer("def f(");
  old_offer->publish("x, y", false);
  RecordingSink old_sink, std_sink, heir_sink;
  std::vector<std::string> events;
  net::steady_timer gate(ioc, net::steady_timer::time_point::max());
  std::optional<TypingOutcome> heir_typing;
  bool preempted = false;
  auto old_request = [&]() -> Task<void> {
    auto slot = co_await dispatcher.acquire(sched::Request{.klass = 1, .cost_tokens = 10, .supersede_key = "k"},
                                            old_sink, dispatcher.epoch(), old_offer);
    if (!slot) co_return;
    slot->set_interrupt_hook([&] { preempted = slot->preempted(); });
    co_await gate.async_wait(kAsTuple);  // preempted, then the keystroke arrives
    slot->set_interrupt_hook(nullptr);
    old_offer->close();  // its run ended
    auto again = co_await slot->requeue(5, old_sink);
    events.push_back(again ? "old requeued" : "old: " + std::string(map_error(again.error().code).code));
  };
  auto other = [&](std::string name, sched::Request request, RecordingSink& sink,
                   std::shared_ptr<TypingOffer> o) -> Task<void> {
    auto slot = co_await dispatcher.acquire(request, sink, dispatcher.epoch(), std::move(o));
    if (!slot) co_return;
    if (name == "heir") heir_typing = slot->typing_outcome();
    events.push_back(name + " started");
  };
  net::co_spawn(ioc, old_request(), net::detached);
  ioc.run_for(std::chrono::milliseconds(5));
  ioc.restart();
  net::co_spawn(ioc, other("std", sched::Request{.klass = 0, .cost_tokens = 10}, std_sink, nullptr), net::detached);
  ioc.run_for(std::chrono::milliseconds(5));
  ioc.restart();
  EXPECT_TRUE(preempted);
  net::co_spawn(ioc,
                other("heir", sched::Request{.klass = 1, .cost_tokens = 10, .supersede_key = "k"}, heir_sink,
                      offer("def f(x,")),
                net::detached);
  ioc.run_for(std::chrono::milliseconds(10));
  ioc.restart();
  gate.cancel();
  ioc.run_for(std::chrono::milliseconds(200));
  ioc.restart();
  dispatcher.stop();
  ioc.run_for(std::chrono::milliseconds(10));
  EXPECT_EQ(events, (std::vector<std::string>{"old: superseded", "std started", "heir started"}));
  EXPECT_EQ(heir_typing, std::optional<TypingOutcome>(TypingOutcome::kNotEligible));
  EXPECT_FALSE(old_offer->claimed());
}

}  // namespace
}  // namespace arbiter::dispatcher_test
