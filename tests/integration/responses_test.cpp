// OpenAI's Responses API (/v1/responses) through the gateway to real
// arbiter-sim engines: scheduled in the chat class, answered whole or as the
// API's typed events relayed as they came, metered from the usage in the
// answer (input and output tokens), and a clear 404 for a model whose
// engines do not serve it.
#include <gtest/gtest.h>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/metrics_text.hpp"

namespace arbiter::test {
namespace {

HttpResponse ask(const GatewayProcess& gateway, const std::string& extra) {
  const std::string body =
      R"({"model":"m1","input":[{"role":"user","content":"Say some words."}],"max_output_tokens":6,)"
      R"("min_tokens":6)" + extra + "}";
  HttpRequest r = gateway_post("/v1/responses", body, kAlphaKey, "chat");
  r.headers.pop_back();  // no class claimed: the default classes put responses in chat
  return http_call(gateway.port(), r, Millis(30'000));
}

TEST(Responses, AWholeAnswerIsRelayedAndMeteredFromItsUsage) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  GatewayProcess gateway(config.to_yaml());
  const HttpResponse r = ask(gateway, "");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto answer = r.json();
  EXPECT_EQ(answer.at("object").as_string(), "response");
  EXPECT_EQ(answer.at("output").as_array().at(0).at("content").as_array().at(0).at("type").as_string(), "output_text");
  const int64_t input = answer.at("usage").at("input_tokens").as_int64();
  ASSERT_EQ(answer.at("usage").at("output_tokens").as_int64(), 6);
  const auto line = gateway.wait_for_log(
      [](const boost::json::object& o) { return o.contains("completion_tokens"); }, Millis(5'000));
  ASSERT_TRUE(line.has_value()) << gateway.stdout_text();
  EXPECT_EQ(line->at("class").as_string(), "chat");
  EXPECT_EQ(line->at("completion_tokens").as_int64(), 6);
  EXPECT_EQ(line->at("prompt_tokens").as_int64(), input);
  // Sent to the engine's /v1/responses.
  EXPECT_GE(sim.metric("vllm:request_success_total", {{"finished_reason", "length"}}).value_or(0), 1);
}

TEST(Responses, AStreamsTypedEventsAreRelayedAndItsUsageCounted) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  GatewayProcess gateway(config.to_yaml());
  const HttpResponse r = ask(gateway, R"(,"stream":true)");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto events = split_sse_events(r.body);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.front().starts_with("event: response.created\n")) << events.front();
  EXPECT_TRUE(events.back().starts_with("event: response.completed\n")) << events.back();
  int deltas = 0;
  for (const auto& e : events) deltas += e.starts_with("event: response.output_text.delta\n") ? 1 : 0;
  EXPECT_EQ(deltas, 6);
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(r.body.find("stream_options"), std::string::npos);
  const auto line = gateway.wait_for_log(
      [](const boost::json::object& o) { return o.contains("completion_tokens"); }, Millis(5'000));
  ASSERT_TRUE(line.has_value()) << gateway.stdout_text();
  EXPECT_EQ(line->at("completion_tokens").as_int64(), 6);  // from response.completed, not one per event
  EXPECT_GT(line->at("prompt_tokens").as_int64(), 0);
}

// A stream the engine cuts short has no usage: it is billed the tokens its
// text deltas carried, not one per event of any type (response.created,
// output_item.added, ...).
TEST(Responses, AStreamCutShortIsBilledItsDeltasNotItsEvents) {
  SimProcess sim({"--profile", "tiny", "--model", "m1", "--crash-after-tokens", "3"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  GatewayProcess gateway(config.to_yaml());
  const HttpResponse r = ask(gateway, R"(,"stream":true)");
  int deltas = 0;
  for (const auto& e : split_sse_events(r.body)) deltas += e.starts_with("event: response.output_text.delta\n") ? 1 : 0;
  const auto line = gateway.wait_for_log(
      [](const boost::json::object& o) { return o.contains("completion_tokens"); }, Millis(5'000));
  ASSERT_TRUE(line.has_value()) << gateway.stdout_text();
  EXPECT_EQ(line->at("tokens_from").as_string(), "events") << r.body;
  EXPECT_EQ(line->at("completion_tokens").as_int64(), deltas) << r.body;
  EXPECT_LE(deltas, 3);
}

TEST(Responses, AModelWhoseEnginesDoNotServeItIs404AndBadInputIs400) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.backend_extra = ", engine: llamacpp";  // llama.cpp's server: no /v1/responses by default
  GatewayProcess gateway(config.to_yaml());
  const HttpResponse r = ask(gateway, "");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_NE(r.body.find("'m1'"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("/v1/responses"), std::string::npos) << r.body;
  EXPECT_EQ(sim.metric("vllm:request_success_total", {{"finished_reason", "length"}}).value_or(0), 0);

  // A pool that mixes engines with and without it is refused the same way
  // (the scheduler could place the request on either), naming the one
  // without; nothing reaches either engine.
  SimProcess vllm({"--profile", "tiny", "--model", "m1"});
  GatewayConfig mixed;
  mixed.backend_ports = {vllm.port(), sim.port()};
  mixed.backend_extras = {"", ", engine: llamacpp"};
  GatewayProcess mixed_gateway(mixed.to_yaml());
  const HttpResponse refused_mixed = ask(mixed_gateway, "");
  EXPECT_EQ(refused_mixed.status, 404) << refused_mixed.body;
  EXPECT_NE(refused_mixed.body.find("does not"), std::string::npos) << refused_mixed.body;
  EXPECT_EQ(vllm.metric("vllm:request_success_total", {{"finished_reason", "length"}}).value_or(0), 0);
  EXPECT_EQ(sim.metric("vllm:request_success_total", {{"finished_reason", "length"}}).value_or(0), 0);

  HttpRequest bad = gateway_post("/v1/responses", R"({"model":"m1","input":[]})", kAlphaKey, "chat");
  const HttpResponse refused = http_call(gateway.port(), bad, Millis(10'000));
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("input"), std::string::npos) << refused.body;
}

}  // namespace
}  // namespace arbiter::test
