// SimServer as a library, the way the gateway embeds it for `type: sim`
// backends: in process, on the caller's io_context (strands) or on an
// IoPool (one context per thread), started and stopped through its API.
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "integration/sim_harness.hpp"
#include "sim/sim_server.hpp"

namespace arbiter::test {
namespace {

// Runs `stop()` on `ioc` and waits for it.
void stop_and_wait(sim::SimServer& server, net::io_context& ioc) {
  std::promise<void> done;
  net::co_spawn(ioc, server.stop(std::chrono::milliseconds(1'000)), [&done](std::exception_ptr) { done.set_value(); });
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
}

// Streams, whole answers, a client that leaves and per-engine faults, on
// every engine of `server`.
void exercise(sim::SimServer& server) {
  ASSERT_EQ(server.ports().size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto port = server.ports()[i];
    const auto whole = http_call(port, sim_post("/v1/chat/completions", sim_chat(R"("max_tokens":4,"ignore_eos":true)", "hi", "m1")));
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(whole.json().at("usage").at("completion_tokens").as_int64(), 4);
    const auto stream = http_call(port, sim_post("/v1/completions", R"({"model":"m1","prompt":"x","max_tokens":6,"ignore_eos":true,"stream":true})"));
    EXPECT_EQ(sse_payloads(stream.body).size(), 6u);

    HttpConnection leaving(port);
    leaving.send(sim_post("/v1/completions", R"({"model":"m1","prompt":"x","max_tokens":5000,"ignore_eos":true,"stream":true})"));
    ASSERT_EQ(leaving.read_head().status, 200);
    ASSERT_GE(leaving.read_events(2).size(), 2u);
    leaving.close_abruptly();
    const auto deadline = Clock::now() + Millis(3'000);
    while (metric_value(http_get(port, "/metrics").body, "arbiter_sim_requests_aborted_total") != 1.0) {
      ASSERT_LT(Clock::now(), deadline) << "engine " << i << " did not abort";
      std::this_thread::sleep_for(Millis(20));
    }
  }
  sim::Faults faults;
  faults.error_rate = 1;
  faults.error_status = 429;
  ASSERT_TRUE(server.set_faults(1, faults));
  EXPECT_EQ(server.faults(1).error_status, 429);
  EXPECT_EQ(http_call(server.ports()[1], sim_post("/v1/completions", R"({"model":"m1","prompt":"x"})")).status, 429);
  EXPECT_EQ(http_call(server.ports()[0], sim_post("/v1/completions", R"({"model":"m1","prompt":"x","max_tokens":2})")).status, 200);
  faults.error_status = 404;
  EXPECT_FALSE(server.set_faults(1, faults));
}

sim::SimOptions two_engines() {
  sim::SimOptions options;
  options.engines = 2;
  options.model = "m1";
  return options;
}

TEST(SimEmbed, OnAThreadedIoContext) {
  net::io_context ioc(2);
  auto server = sim::SimServer::create(ioc, two_engines());
  ASSERT_TRUE(server) << server.error();
  ASSERT_TRUE((*server)->start());
  auto guard = net::make_work_guard(ioc);
  std::thread a([&] { ioc.run(); });
  std::thread b([&] { ioc.run(); });
  exercise(**server);
  stop_and_wait(**server, ioc);
  ioc.stop();
  a.join();
  b.join();
}

TEST(SimEmbed, OnAnIoPool) {
  IoPool pool(2);
  auto server = sim::SimServer::create(pool.context(0), two_engines(), &pool);
  ASSERT_TRUE(server) << server.error();
  ASSERT_TRUE((*server)->start());
  std::thread runner([&] { pool.run(); });
  exercise(**server);
  stop_and_wait(**server, pool.context(0));
  pool.stop();
  runner.join();
}

TEST(SimEmbed, InvalidOptionsAreReported) {
  net::io_context ioc;
  sim::SimOptions options;
  options.profile = "nope";
  const auto server = sim::SimServer::create(ioc, options);
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().find("unknown profile 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace arbiter::test
