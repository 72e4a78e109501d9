// The engine's usage becomes the request's real cost: the per-tenant token
// counters and the access log show it, and the scheduler is charged with it
// instead of the estimate (prompt + max_tokens).
#include <gtest/gtest.h>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/metrics_text.hpp"
#include "support/raw_socket.hpp"

namespace arbiter::test {
namespace {

// A chat request to the gateway for exactly `tokens` tokens, with `extra` fields.
HttpResponse chat_exactly(const GatewayProcess& gateway, int tokens, const std::string& extra = "",
                          const std::string& cls = "chat") {
  const std::string n = std::to_string(tokens);
  return http_call(gateway.port(),
                   gateway_post("/v1/chat/completions",
                                sim_chat(R"("max_tokens":)" + n + R"(,"min_tokens":)" + n + extra, "Some words.", "m1"),
                                kAlphaKey, cls));
}

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

  const std::string text = http_get(gateway.admin_port(), "/metrics").body;
  const Labels who{{"class", "chat"}, {"tenant", "alpha"}};
  Labels completion = who, prompt_labels = who;
  completion["kind"] = "completion";
  prompt_labels["kind"] = "prompt";
  EXPECT_EQ(metric_value(text, "arbiter_tokens_total", completion), 9);
  EXPECT_EQ(metric_value(text, "arbiter_tokens_total", prompt_labels), static_cast<double>(prompt));
}

// Most streaming clients (the OpenAI SDKs by default) do not ask for usage:
// the gateway asks the engine for it, counts the engine's tokens, and the
// client's stream is what it asked for, with no usage chunk.
TEST(TokenAccounting, AStreamWhoseClientAskedNoUsageIsCountedFromTheEngines) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  GatewayProcess gateway(config.to_yaml());
  const HttpResponse r = chat_exactly(gateway, 7, R"(,"stream":true)");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto payloads = sse_payloads(r.body);
  ASSERT_EQ(payloads.size(), 8u) << r.body;  // the role chunk and 7 tokens: no usage chunk
  for (const auto& p : payloads) EXPECT_FALSE(p.at("choices").as_array().empty()) << r.body;
  EXPECT_EQ(split_sse_events(r.body).back(), "data: [DONE]\n\n");
  const auto line = gateway.wait_for_log(
      [](const boost::json::object& o) { return o.contains("completion_tokens"); }, Millis(5'000));
  ASSERT_TRUE(line.has_value()) << gateway.stdout_text();
  EXPECT_EQ(line->at("completion_tokens").as_int64(), 7);
  EXPECT_GT(line->at("prompt_tokens").as_int64(), 0);
  EXPECT_EQ(gateway.wait_for_metric("arbiter_tokens_total", [](double v) { return v >= 7; }, Millis(5'000),
                                    {{"class", "chat"}, {"tenant", "alpha"}, {"kind", "completion"}}),
            7);

  // A client that asks gets its usage chunk, as before.
  const HttpResponse asked = chat_exactly(gateway, 7, R"(,"stream":true,"stream_options":{"include_usage":true})");
  ASSERT_EQ(asked.status, 200) << asked.body;
  EXPECT_EQ(stream_usage_tokens(asked.body), line->at("prompt_tokens").as_int64() + 7) << asked.body;
}

// stream_usage: false leaves the client's body as it is: the stream's tokens
// are then its events counted (the role chunk is not a token), in the log,
// the metrics and the usage report alike.
TEST(TokenAccounting, StreamUsageOffSendsTheBodyAsItCameAndBillsTheEvents) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.backend_extra = ", stream_usage: false";
  GatewayProcess gateway(config.to_yaml());
  const HttpResponse r = chat_exactly(gateway, 7, R"(,"stream":true)");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(sse_payloads(r.body).size(), 8u) << r.body;
  const auto line = gateway.wait_for_log([](const boost::json::object& o) { return o.contains("status"); },
                                         Millis(5'000));
  ASSERT_TRUE(line.has_value()) << gateway.stdout_text();
  EXPECT_EQ(line->contains("completion_tokens") ? line->at("completion_tokens").as_int64() : -1, 7)
      << boost::json::serialize(*line);
  EXPECT_EQ(line->contains("tokens_from") ? line->at("tokens_from").as_string() : "", "events");
  EXPECT_EQ(gateway.wait_for_metric("arbiter_tokens_total", [](double v) { return v >= 7; }, Millis(5'000),
                                    {{"class", "chat"}, {"tenant", "alpha"}, {"kind", "completion"}}),
            7);
  const auto report = http_get(gateway.admin_port(), "/admin/usage").json();
  EXPECT_EQ(report.at("total").at("completion_tokens").as_int64(), 7) << boost::json::serialize(report);
}

// A stream its client leaves halfway is cut at once, with no usage chunk:
// it is billed the events it was sent, not nothing.
TEST(TokenAccounting, AStreamItsClientLeavesIsBilledWhatItWasSent) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  GatewayProcess gateway(config.to_yaml());
  {
    RawSocket client(gateway.port());
    const std::string body = sim_chat(R"("max_tokens":2000,"min_tokens":2000,"stream":true)", "A long story.", "m1");
    client.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + std::string(kAlphaKey) +
                "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                body);
    // Read until the role chunk and 20 token events have arrived, then leave.
    std::string seen;
    auto events = [&] {
      std::size_t n = 0;
      for (std::size_t at = seen.find("data: {"); at != std::string::npos; at = seen.find("data: {", at + 1)) ++n;
      return n;
    };
    while (events() < 21) {
      const std::string more = client.read_until("\n\n", Millis(10'000));
      ASSERT_FALSE(more.empty()) << seen;
      seen += more;
    }
  }  // closed
  const auto line = gateway.wait_for_log([](const boost::json::object& o) { return o.contains("status"); },
                                         Millis(10'000));
  ASSERT_TRUE(line.has_value()) << gateway.stdout_text();
  EXPECT_EQ(line->at("status").as_int64(), 499);
  EXPECT_EQ(line->contains("tokens_from") ? line->at("tokens_from").as_string() : "", "events");
  const int64_t billed = line->contains("completion_tokens") ? line->at("completion_tokens").as_int64() : -1;
  EXPECT_GE(billed, 20) << boost::json::serialize(*line);
  EXPECT_LT(billed, 2000) << "billed as if it had run to the end";
  const auto report = http_get(gateway.admin_port(), "/admin/usage").json();
  EXPECT_EQ(report.at("total").at("completion_tokens").as_int64(), billed);
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
  const std::string text = http_get(gateway.admin_port(), "/metrics").body;
  EXPECT_EQ(metric_value(text, "arbiter_tokens_total",
                         {{"class", "batch"}, {"tenant", "alpha"}, {"kind", "completion"}}),
            12);

  // The same without stream_options: counted alike, and no usage chunk reaches the client.
  const HttpResponse plain = chat_exactly(gateway, 12, R"(,"stream":true)", "batch");
  ASSERT_EQ(plain.status, 200) << plain.body;
  for (const auto& p : sse_payloads(plain.body)) EXPECT_FALSE(p.at("choices").as_array().empty()) << plain.body;
  // Accounting runs once the response is out: wait for it.
  EXPECT_EQ(gateway.wait_for_metric("arbiter_tokens_total", [](double v) { return v >= 24; }, Millis(5'000),
                                    {{"class", "batch"}, {"tenant", "alpha"}, {"kind", "completion"}}),
            24);
}

}  // namespace
}  // namespace arbiter::test
