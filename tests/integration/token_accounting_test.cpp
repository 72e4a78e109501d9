// The engine's usage becomes the request's real cost: the per-tenant token
// counters and the access log show it, and the scheduler is charged with it
// instead of the estimate (prompt + max_tokens).
#include <gtest/gtest.h>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/metrics_text.hpp"

namespace arbiter::test {
namespace {

TEST(TokenAccounting, WholeAnswersAreCountedFromTheEnginesUsage) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  GatewayProcess gateway(config.to_yaml());

  // The sim generates exactly 9 tokens (max_tokens = min_tokens).
  const HttpResponse r = http_call(
      gateway.port(),
      gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":9,"min_tokens":9)", "Count to nine.", "m1"),
                   kAlphaKey, "chat"));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto usage = r.json().at("usage").as_object();
  ASSERT_EQ(usage.at("completion_tokens").as_int64(), 9);
  const int64_t prompt = usage.at("prompt_tokens").as_int64();
  ASSERT_GT(prompt, 0);
  // Accounting runs once the response is out: wait for the request's log line.
  const auto line = gateway.wait_for_log(
      [](const boost::json::object& o) { return o.contains("completion_tokens"); }, Millis(5'000));
  ASSERT_TRUE(line.has_value()) << gateway.stdout_text();
  EXPECT_EQ(line->at("prompt_tokens").as_int64(), prompt);
  EXPECT_EQ(line->at("completion_tokens").as_int64(), 9);

  const std::string text = http_get(gateway.port(), "/metrics").body;
  const Labels who{{"class", "chat"}, {"tenant", "alpha"}};
  Labels completion = who, prompt_labels = who;
  completion["kind"] = "completion";
  prompt_labels["kind"] = "prompt";
  EXPECT_EQ(metric_value(text, "arbiter_tokens_total", completion), 9);
  EXPECT_EQ(metric_value(text, "arbiter_tokens_total", prompt_labels), static_cast<double>(prompt));
}

TEST(TokenAccounting, AResumableStreamIsCountedOverItsRuns) {
  // A batch request (resumable: the gateway asks the engine for usage and
  // keeps a checkpoint) streamed to the client.
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.backend_extra = ", continue_final_message: true";
  GatewayProcess gateway(config.to_yaml());
  const HttpResponse r = http_call(
      gateway.port(),
      gateway_post("/v1/chat/completions",
                   sim_chat(R"("max_tokens":12,"min_tokens":12,"stream":true,"stream_options":{"include_usage":true})",
                            "Twelve words.", "m1"),
                   kAlphaKey, "batch"));
  ASSERT_EQ(r.status, 200) << r.body;
  // Accounting runs once the response is out: wait for the request's log line.
  const auto line = gateway.wait_for_log(
      [](const boost::json::object& o) { return o.contains("status"); }, Millis(5'000));
  ASSERT_TRUE(line.has_value()) << gateway.stdout_text();
  EXPECT_EQ(line->contains("completion_tokens") ? line->at("completion_tokens").as_int64() : -1, 12)
      << boost::json::serialize(*line);
  const std::string text = http_get(gateway.port(), "/metrics").body;
  EXPECT_EQ(metric_value(text, "arbiter_tokens_total",
                         {{"class", "batch"}, {"tenant", "alpha"}, {"kind", "completion"}}),
            12);
}

}  // namespace
}  // namespace arbiter::test
