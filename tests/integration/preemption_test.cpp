// Preemption with checkpoint and resume (issue 4), against arbiter-sim: a
// batch request holding the only slot is aborted upstream when realtime work
// below its min_share arrives, queued again, and continued from what it had
// generated, so its client still gets one whole stream or one whole answer
// with every token it asked for; the audit trail names the request that
// took its slot.
#include <gtest/gtest.h>

#include <future>
#include <set>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/audit_trail.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

constexpr int kBatchTokens = 120;  // ~1.3 s on the simulated A100 at batch 1

// One slot: whatever realtime needs must come from the batch request.
GatewayConfig one_slot(uint16_t sim_port, bool preemption = true) {
  GatewayConfig c;
  c.backend_ports = {sim_port};
  c.max_concurrency = 1;
  c.backend_extra = ", continue_final_message: true";
  c.alpha_classes = "[realtime, batch, chat]";
  c.extra =
      "classes:\n"
      "  - {name: realtime, min_share: 0.5, weight: 4}\n"
      "  - {name: batch, preemptible: true, max_queue_wait_ms: 600000}\n"
      "  - {name: chat}\n"  // the one class tenant beta may use
      // Realtime preempts after 50 ms of waiting, not the default second.
      "scheduler: {preempt_after_ms: 50, preemption: " +
      std::string(preemption ? "true" : "false") + "}\n"
      "default_class: batch\n";
  return c;
}

HttpRequest claimed(const std::string& cls, const std::string& target, std::string body) {
  return gateway_post(target, std::move(body), kAlphaKey, cls);
}

// A short realtime request while the batch one runs; returns its answer.
HttpResponse realtime_call(uint16_t port) {
  return http_call(port, claimed("realtime", "/v1/chat/completions",
                                 sim_chat(R"("max_tokens":4,"min_tokens":4)", "Quick!", "m1")));
}

void expect_preempted_once(GatewayProcess& gateway, SimProcess& sim) {
  const auto events = http_get(gateway.admin_port(), "/metrics").body;
  EXPECT_EQ(metric_value(events, "arbiter_scheduler_events_total", {{"class", "batch"}, {"event", "preempted"}}), 1);
  // Counted once the answer has gone out: the client may have it first.
  EXPECT_EQ(gateway.wait_for_metric("arbiter_requests_resumed_total", [](double v) { return v >= 1; }, Millis(5'000),
                                    {{"class", "batch"}}),
            1);
  EXPECT_EQ(sim.wait_for_metric("arbiter_sim_requests_aborted_total", [](double v) { return v >= 1; }, Millis(3'000)),
            1)
      << "the first run must be aborted in the engine, not left running";
}

TEST(Preemption, StreamedChatIsResumedAsOneStreamWithEveryToken) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(one_slot(sim.port()).to_yaml());

  HttpConnection batch(gateway.port());
  batch.send(claimed("batch", "/v1/chat/completions",
                     sim_chat(R"("max_tokens":120,"min_tokens":120,"stream":true,"stream_options":{"include_usage":true})",
                              "Write a long essay.", "m1")));
  ASSERT_EQ(batch.read_head().status, 200);
  ASSERT_GE(batch.read_events(10).size(), 10u) << "the batch request should be generating";

  const HttpResponse quick = realtime_call(gateway.port());
  EXPECT_EQ(quick.status, 200) << quick.body;
  EXPECT_EQ(quick.header("x-arbiter-class"), "realtime");

  batch.read_rest(Millis(20'000));
  ASSERT_TRUE(batch.complete()) << (batch.error() ? *batch.error() : "") << "\n" << describe_output(gateway);
  const auto chunks = sse_payloads(batch.body());
  std::string text;
  std::set<std::string> ids;
  int role_chunks = 0;
  std::optional<boost::json::object> usage;
  std::string finish;
  for (const auto& c : chunks) {
    ASSERT_FALSE(c.contains("error")) << boost::json::serialize(c);
    ids.insert(std::string(c.at("id").as_string()));
    if (const auto* u = c.if_contains("usage"); u && u->is_object()) usage = u->as_object();
    if (c.at("choices").as_array().empty()) continue;
    const auto& choice = c.at("choices").at(0).as_object();
    const auto& delta = choice.at("delta").as_object();
    if (delta.contains("role")) ++role_chunks;
    if (const auto* t = delta.if_contains("content"); t && t->is_string()) text += t->as_string();
    if (choice.at("finish_reason").is_string()) finish = choice.at("finish_reason").as_string();
  }
  EXPECT_TRUE(batch.body().ends_with("data: [DONE]\n\n"));
  EXPECT_EQ(ids.size(), 1u) << "one stream, one id, across both runs";
  EXPECT_EQ(role_chunks, 1) << "the resumed run's role preamble must not reach the client";
  EXPECT_EQ(word_count(text), static_cast<std::size_t>(kBatchTokens)) << text;
  EXPECT_EQ(finish, "length");
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->at("completion_tokens"), kBatchTokens);
  EXPECT_EQ(usage->at("total_tokens").as_int64(),
            usage->at("prompt_tokens").as_int64() + usage->at("completion_tokens").as_int64());
  expect_preempted_once(gateway, sim);
  // The audit trail (the store, on by default) names the request that took
  // the batch request's slot, and why each dispatch went where it did.
  const std::string taker = "taken_by=" + quick.header("x-request-id").value_or("?") + " class=realtime";
  bool found = false;
  const std::string trail = audit_trail_with(gateway, taker, found);
  EXPECT_TRUE(found) << "no preempted row naming " << taker << " in " << trail;
  EXPECT_NE(trail.find("\"kind\":\"preempted\""), std::string::npos) << trail;
  EXPECT_NE(trail.find("placement="), std::string::npos) << trail;
}

TEST(Preemption, WholeCompletionIsResumedAndAnsweredOnce) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(one_slot(sim.port()).to_yaml());

  auto batch = std::async(std::launch::async, [&] {
    return http_call(gateway.port(),
                     claimed("batch", "/v1/completions",
                             R"({"model":"m1","prompt":"Once upon a time","max_tokens":120,"min_tokens":120})"),
                     Millis(20'000));
  });
  // Running and generating before realtime arrives.
  ASSERT_GE(sim.wait_for_metric("vllm:generation_tokens_total", [](double v) { return v >= 10; }, Millis(5'000)), 10)
      << describe_output(gateway);
  const HttpResponse quick = realtime_call(gateway.port());
  EXPECT_EQ(quick.status, 200) << quick.body;

  const HttpResponse whole = batch.get();
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.header("content-type"), "application/json");
  EXPECT_EQ(whole.header("x-arbiter-preemptions"), "1");
  const auto body = whole.json();
  EXPECT_EQ(body.at("object"), "text_completion");
  const auto& choice = body.at("choices").at(0);
  EXPECT_EQ(word_count(std::string(choice.at("text").as_string())), static_cast<std::size_t>(kBatchTokens));
  EXPECT_EQ(choice.at("finish_reason"), "length");
  EXPECT_EQ(body.at("usage").at("completion_tokens"), kBatchTokens);
  expect_preempted_once(gateway, sim);
}

TEST(Preemption, OffMeansRealtimeWaitsForTheBatchToFinish) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayConfig config = one_slot(sim.port(), /*preemption=*/false);

  GatewayProcess gateway(config.to_yaml());

  auto batch = std::async(std::launch::async, [&] {
    return http_call(gateway.port(),
                     claimed("batch", "/v1/completions",
                             R"({"model":"m1","prompt":"Once","max_tokens":40,"min_tokens":40})"),
                     Millis(20'000));
  });
  ASSERT_GE(sim.wait_for_metric("vllm:generation_tokens_total", [](double v) { return v >= 5; }, Millis(5'000)), 5);
  EXPECT_EQ(realtime_call(gateway.port()).status, 200);
  const HttpResponse whole = batch.get();
  EXPECT_EQ(whole.status, 200);
  EXPECT_EQ(whole.header("x-arbiter-preemptions"), "0");
  EXPECT_EQ(sim.metric("arbiter_sim_requests_aborted_total"), 0);
}

}  // namespace
}  // namespace arbiter::test
