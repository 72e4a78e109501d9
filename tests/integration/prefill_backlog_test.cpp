// The prefill backlog limit through the gateway: a backend with a prefill
// rate takes no new request while the prompts it was given are not yet
// prefilled, and the first streamed token of a request says its prompt is.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/metrics_text.hpp"

namespace arbiter::test {
namespace {

TEST(PrefillBacklog, ARequestWaitsForTheFirstTokenOfTheOneBeforeIt) {
  // The engine holds each request 1.5 s before it starts on it: the first
  // request's prompt stays unprefilled (no first token) that long, so the
  // second is sure to arrive while it is (no race with a fast prefill).
  SimProcess sim({"--profile", "tiny", "--model", "m1", "--added-latency-ms", "1500"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  // One prompt token a second: by the estimate alone, a 200-token prompt
  // would block the backend for minutes (past chat's 30 s queue deadline).
  config.backend_extra = ", prefill_tokens_per_s: 1";
  config.extra = "scheduler: {max_prefill_backlog_ms: 1000}\n";
  GatewayProcess gateway(config.to_yaml());
  const std::string prompt(800, 'a');  // ~200 tokens by the gateway's estimate

  // The first streams for several seconds (7,000 tokens on the tiny engine).
  HttpConnection first(gateway.port());
  first.send(gateway_post("/v1/chat/completions",
                          sim_chat(R"("max_tokens":7000,"min_tokens":7000,"stream":true)", prompt, "m1"),
                          kAlphaKey, "chat"));
  // Dispatched (its prompt now in the backend's backlog), not yet started.
  const auto deadline = Clock::now() + Millis(5'000);
  while (metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_backend_in_flight", {}).value_or(0) < 1) {
    ASSERT_LT(Clock::now(), deadline) << "the first request was never dispatched";
    std::this_thread::sleep_for(Millis(5));
  }
  auto second = std::async(std::launch::async, [&] {
    return http_call(gateway.port(),
                     gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":2,"min_tokens":2)", prompt, "m1"),
                                  kAlphaKey, "chat"),
                     Millis(60'000));
  });
  const HttpResponse head = first.read_head();
  ASSERT_EQ(head.status, 200);
  const std::string first_id = head.header("x-request-id").value_or("?");
  ASSERT_GE(first.read_events(2).size(), 2u);  // the first is streaming: its prompt is prefilled
  const HttpResponse r = second.get();
  ASSERT_EQ(r.status, 200) << r.body;
  // It waited, and for the backend's prefill queue.
  EXPECT_EQ(r.header("x-arbiter-wait-reason").value_or("(none)"), "prefill");
  // The first token let it go, not the end of the first request: it is done
  // (logged) while the first is still streaming (no log line yet).
  const std::string second_id = r.header("x-request-id").value_or("?");
  ASSERT_TRUE(gateway.wait_for_log([&](const boost::json::object& o) { return std::string_view(o.at("request_id").as_string()) == second_id; },
                                   Millis(5'000)));
  for (const auto& line : gateway.access_log()) {
    EXPECT_NE(std::string_view(line.at("request_id").as_string()), first_id)
        << "the first request ended before the second was served";
  }
}

}  // namespace
}  // namespace arbiter::test
