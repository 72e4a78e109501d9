// A request for n answers runs n sequences on its engine, so it holds n of its
// backend's slots (docs/scheduler.md, "Slots are sequences"): with
// max_concurrency 2, one request with n = 2 leaves no room, and the next one
// waits in the gateway's queue until it ends instead of going to the engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

std::string chat_body_n(int n) {
  return R"({"model":"m1","n":)" + std::to_string(n) +
         R"(,"messages":[{"role":"user","content":"hi"}]})";
}

TEST(Sequences, ARequestForNAnswersHoldsNSlotsAndTheNextOneQueues) {
  Harness h(GatewayConfig{.max_concurrency = 2});
  h.upstream().push(Hang{});
  HttpConnection first(h.port());
  first.send(chat_request(chat_body_n(2)));
  ASSERT_TRUE(h.upstream().wait_for_requests(1, Millis(5'000)));
  ASSERT_EQ(h.wait_for_metric("arbiter_backend_in_flight", 2, Millis(5'000)), 2.0)
      << describe_output(h.gateway());

  HttpConnection second(h.port());
  second.send(chat_request(chat_body()));
  ASSERT_EQ(h.wait_for_metric("arbiter_queue_depth", 1, Millis(5'000), {{"class", "chat"}}), 1.0)
      << "the second request should wait in the gateway: " << h.upstream().describe();
  EXPECT_EQ(h.upstream().request_count(), 1u);

  // The first one's client leaves: its two slots come back, the second runs.
  first.close_abruptly();
  ASSERT_TRUE(h.upstream().wait_for_requests(2, Millis(5'000))) << describe_output(h.gateway());
  EXPECT_EQ(second.read_head().status, 200);
  second.read_rest();
  EXPECT_EQ(h.wait_for_metric("arbiter_backend_in_flight", 0, Millis(5'000)), 0.0);
}

// The control: with n = 1 the first request leaves a slot, and the second
// goes to the engine at once.
TEST(Sequences, WithOneAnswerTheSecondRequestRunsAtOnce) {
  Harness h(GatewayConfig{.max_concurrency = 2});
  h.upstream().push(Hang{});
  HttpConnection first(h.port());
  first.send(chat_request(chat_body_n(1)));
  ASSERT_TRUE(h.upstream().wait_for_requests(1, Millis(5'000)));
  HttpConnection second(h.port());
  second.send(chat_request(chat_body()));
  ASSERT_TRUE(h.upstream().wait_for_requests(2, Millis(5'000))) << describe_output(h.gateway());
  EXPECT_EQ(second.read_head().status, 200);
  first.close_abruptly();
}

// arbiter-sim (model m1, ~20 ms steps) behind a gateway that gives its one
// backend 4 slots.
struct SimBehindGateway {
  SimProcess sim{{"--profile", "tiny", "--model", "m1", "--step-time-scale", "20"}};
  GatewayProcess gateway{[this] {
    GatewayConfig config;
    config.backend_ports = {sim.port()};
    config.max_concurrency = 4;
    return config.to_yaml();
  }()};
};

// The same through a real engine: arbiter-sim runs a request for n answers
// as n sequences (as vLLM does), so the engine's own running count is what
// the slots bound. Four requests for 3 answers on a backend of 4 slots: the
// first takes 3, the second starts on the last free one (a request starts
// on one free slot: 6 running), the other two wait in the gateway. Counted
// as one slot each, all four would run: 12 sequences.
TEST(Sequences, TheEngineRunsNoMoreSequencesThanTheSlotsAllowThroughTheGateway) {
  SimBehindGateway env;
  SimProcess& sim = env.sim;
  GatewayProcess& gateway = env.gateway;
  std::vector<std::unique_ptr<HttpConnection>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<HttpConnection>(gateway.port()));
    clients.back()->send(gateway_post(
        "/v1/chat/completions",
        sim_chat(R"("n":3,"max_tokens":400,"ignore_eos":true,"stream":true)", "hi " + std::to_string(i), "m1"),
        kAlphaKey, "chat"));
  }
  // Two wait in the gateway; meanwhile the engine never runs more than 6.
  double most = 0;
  const auto deadline = Clock::now() + Millis(5'000);
  for (;;) {
    most = std::max(most, sim.metric("vllm:num_requests_running").value_or(0));
    const auto queued = metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_queue_depth",
                                     {{"class", "chat"}});
    if (queued.value_or(0) == 2 && most == 6) break;
    ASSERT_LT(Clock::now(), deadline) << "queued " << queued.value_or(-1) << ", most running " << most;
    std::this_thread::sleep_for(Millis(10));
  }
  for (int i = 0; i < 20; ++i) {
    most = std::max(most, sim.metric("vllm:num_requests_running").value_or(0));
    std::this_thread::sleep_for(Millis(10));
  }
  EXPECT_EQ(most, 6.0) << sim.metrics();
  for (auto& c : clients) c->close_abruptly();
}

// A batch of prompts runs n sequences per prompt (vLLM, and arbiter-sim as
// it): two prompts with n = 2 hold all 4 slots of the backend, so the next
// request waits in the gateway while the engine runs exactly those 4.
TEST(Sequences, ABatchOfPromptsHoldsASlotPerPromptAndAnswer) {
  SimBehindGateway env;
  SimProcess& sim = env.sim;
  GatewayProcess& gateway = env.gateway;
  HttpConnection batch(gateway.port());
  batch.send(gateway_post("/v1/completions",
                          R"({"model":"m1","prompt":["a","b"],"n":2,"max_tokens":400,"ignore_eos":true,"stream":true})",
                          kAlphaKey, "chat"));
  ASSERT_EQ(batch.read_head().status, 200);
  ASSERT_GE(batch.read_events(4).size(), 4u);
  HttpConnection next(gateway.port());
  next.send(gateway_post("/v1/completions", R"({"model":"m1","prompt":"c","max_tokens":4})", kAlphaKey, "chat"));
  const auto queued = [&] {
    return metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_queue_depth", {{"class", "chat"}});
  };
  const auto deadline = Clock::now() + Millis(5'000);
  while (queued().value_or(0) != 1) {
    ASSERT_LT(Clock::now(), deadline) << "the next request should wait in the gateway; engine running "
                                      << sim.metric("vllm:num_requests_running").value_or(-1);
    std::this_thread::sleep_for(Millis(10));
  }
  EXPECT_EQ(sim.metric("vllm:num_requests_running"), 4.0) << sim.metrics();
  // The batch's client leaves: its slots come back and the next one runs.
  batch.close_abruptly();
  EXPECT_EQ(next.read_head().status, 200);
  next.read_rest();
}

}  // namespace
}  // namespace arbiter::test
