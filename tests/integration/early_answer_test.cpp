// The early answer through the gateway (issue 11): once a tenant's backlog
// in a class is measured to drain far slower than its deadline allows, a new
// request of that tenant is answered 429 at once, with the predicted extra
// wait as Retry-After, while another tenant's request is still admitted.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"

namespace arbiter::test {
namespace {

// A chat request that runs about `tokens` engine steps.
std::string long_chat(int tokens) {
  return sim_chat(R"("max_tokens":)" + std::to_string(tokens) + R"(,"min_tokens":)" + std::to_string(tokens),
                  "Write it out.", "m1");
}

TEST(EarlyAnswer, ABacklogThatCannotMakeItsDeadlineIsAnsweredAtOnce) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 1;  // one request at a time: the backlog drains slowly
  config.extra =
      "classes:\n"
      "  - {name: chat, max_queue_wait_ms: 3000}\n"
      "scheduler: {early_reject_margin: 1}\n";
  GatewayProcess gateway(config.to_yaml());

  // Tenant alpha queues 14 requests of ~0.5 s each at once.
  std::vector<std::future<HttpResponse>> backlog;
  for (int i = 0; i < 14; ++i) {
    backlog.push_back(std::async(std::launch::async, [&] {
      return http_call(gateway.port(), gateway_post("/v1/chat/completions", long_chat(500), kAlphaKey, "chat"),
                       Millis(60'000));
    }));
  }
  // Evidence: the oldest queued request has waited half its 3 s limit.
  std::this_thread::sleep_for(Millis(2'000));
  const HttpResponse refused = http_call(
      gateway.port(), gateway_post("/v1/chat/completions", long_chat(2), kAlphaKey, "chat"), Millis(10'000));
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_NE(refused.body.find("predicted to wait"), std::string::npos) << refused.body;
  ASSERT_TRUE(refused.header("retry-after").has_value());
  EXPECT_GE(std::stoi(*refused.header("retry-after")), 1);
  // Beta has nothing queued: served within its share, admitted.
  const HttpResponse admitted = http_call(
      gateway.port(), gateway_post("/v1/chat/completions", long_chat(2), kBetaKey, "chat"), Millis(30'000));
  EXPECT_EQ(admitted.status, 200) << admitted.body;
  for (auto& f : backlog) f.get();  // 200 or 503 by deadline, either way answered
  const auto metrics = http_get(gateway.admin_port(), "/metrics").body;
  EXPECT_GE(metric_value(metrics, "arbiter_scheduler_events_total",
                         {{"class", "chat"}, {"event", "rejected_predicted"}})
                .value_or(0),
            1);
}

}  // namespace
}  // namespace arbiter::test
