// OpenTelemetry traces (issue 47): a request's spans reach an OTLP/HTTP
// receiver started by the test (a fake upstream that records what it is
// sent): the request as the client's child, its queue wait with the reason,
// each upstream attempt as the parent of the engine's own traceparent.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>
#include <thread>

#include <boost/json.hpp>

#include "integration/sim_harness.hpp"
#include "support/fake_upstream.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

constexpr std::string_view kClientTrace = "0af7651916cd43dd8448eb211c80319c";
constexpr std::string_view kClientSpan = "b7ad6b7169203331";

std::string attribute(const boost::json::object& span, std::string_view key) {
  for (const auto& a : span.at("attributes").as_array()) {
    if (a.at("key").as_string() != key) continue;
    const auto& v = a.at("value").as_object();
    for (const char* kind : {"stringValue", "intValue"}) {
      if (v.contains(kind)) return std::string(v.at(kind).as_string());
    }
    return boost::json::serialize(v);
  }
  return "(none)";
}

// Every span the receiver got, by span id.
std::map<std::string, boost::json::object> received_spans(const FakeUpstream& collector) {
  std::map<std::string, boost::json::object> out;
  for (const RecordedRequest& r : collector.requests()) {
    const auto doc = boost::json::parse(r.body).as_object();
    for (const auto& rs : doc.at("resourceSpans").as_array()) {
      for (const auto& ss : rs.at("scopeSpans").as_array()) {
        for (const auto& s : ss.at("spans").as_array()) out[std::string(s.at("spanId").as_string())] = s.as_object();
      }
    }
  }
  return out;
}

TEST(Tracing, ATracedRequestShowsItsQueueWaitAndEachUpstreamAttemptWithTheirLinks) {
  FakeUpstream engine;
  FakeUpstream collector;
  collector.set_handler([](const RecordedRequest&) { return Respond{.status = 200, .body = "{}"}; });
  // The untraced request holds the only slot a while; the traced one's
  // first attempt is refused and retried.
  engine.push(Respond{.body = chat_completion_body(), .header_delay = Millis(500)});
  engine.push(Respond{.status = 503, .body = R"({"error":{"message":"busy","type":"server_error"}})"});
  GatewayConfig config;
  config.backend_ports = {engine.port()};
  config.max_concurrency = 1;
  config.extra = "tracing: {endpoint: \"http://127.0.0.1:" + std::to_string(collector.port()) +
                 "/v1/traces\", sample: 0, flush_ms: 50}\n";
  GatewayProcess gateway(config.to_yaml());

  auto holder = std::async(std::launch::async, [&] { return http_call(gateway.port(), chat_request(chat_body())); });
  ASSERT_TRUE(engine.wait_for_requests(1, Millis(10'000)));
  HttpRequest traced = chat_request(chat_body());
  traced.headers.emplace_back("traceparent", "00-" + std::string(kClientTrace) + "-" + std::string(kClientSpan) + "-01");
  const HttpResponse answer = http_call(gateway.port(), traced, Millis(20'000));
  ASSERT_EQ(answer.status, 200) << describe_output(gateway);
  ASSERT_EQ(holder.get().status, 200);
  // Not traced: sample 0 and no sampled traceparent.
  HttpRequest declined = chat_request(chat_body());
  declined.headers.emplace_back("traceparent", "00-11111111111111111111111111111111-2222222222222222-00");
  ASSERT_EQ(http_call(gateway.port(), declined).status, 200);

  // The request, its queue wait, two attempts and the relay: five spans.
  std::map<std::string, boost::json::object> spans;
  const auto deadline = Clock::now() + Millis(10'000);
  while ((spans = received_spans(collector)).size() < 5 && Clock::now() < deadline) std::this_thread::sleep_for(Millis(20));
  ASSERT_EQ(spans.size(), 5u) << collector.describe();
  const boost::json::object* root = nullptr;
  std::vector<const boost::json::object*> attempts;
  const boost::json::object* queue = nullptr;
  const boost::json::object* relay = nullptr;
  for (const auto& [id, s] : spans) {
    EXPECT_EQ(s.at("traceId").as_string(), kClientTrace) << "one trace, the client's";
    if (s.at("kind") == 2) root = &s;
    if (s.at("kind") == 3) attempts.push_back(&s);
    if (s.at("name") == "queue") queue = &s;
    if (s.at("name") == "relay") relay = &s;
  }
  ASSERT_TRUE(root && queue && relay);
  EXPECT_EQ(root->at("parentSpanId").as_string(), kClientSpan);
  EXPECT_EQ(root->at("name"), "chat m1");
  EXPECT_EQ(attribute(*root, "gen_ai.operation.name"), "chat");
  EXPECT_EQ(attribute(*root, "gen_ai.request.model"), "m1");
  EXPECT_EQ(attribute(*root, "http.response.status_code"), "200");
  EXPECT_NE(attribute(*root, "gen_ai.usage.output_tokens"), "(none)");
  const std::string root_id(root->at("spanId").as_string());
  EXPECT_EQ(queue->at("parentSpanId").as_string(), root_id);
  // Why it waited, as the access log says it (the slot its tenant held).
  const auto logged = gateway.wait_for_log(
      [&](const boost::json::object& line) { return line.contains("wait_reason") && line.at("status") == 200 &&
                                                    attribute(*root, "arbiter.request_id") == line.at("request_id").as_string(); },
      Millis(5'000));
  ASSERT_TRUE(logged) << describe_output(gateway);
  EXPECT_EQ(attribute(*queue, "arbiter.wait_reason"), logged->at("wait_reason").as_string());
  EXPECT_EQ(relay->at("parentSpanId").as_string(), root_id);
  // Each attempt: the root's child, and the parent the engine was told of.
  ASSERT_EQ(attempts.size(), 2u);
  std::sort(attempts.begin(), attempts.end(), [](const auto* a, const auto* b) {
    return a->at("startTimeUnixNano").as_string() < b->at("startTimeUnixNano").as_string();
  });
  EXPECT_EQ(attribute(*attempts[0], "arbiter.attempt"), "first");
  EXPECT_EQ(attribute(*attempts[0], "http.response.status_code"), "503");
  EXPECT_EQ(attribute(*attempts[1], "arbiter.attempt"), "retry");
  EXPECT_EQ(attribute(*attempts[1], "http.response.status_code"), "200");
  const auto seen = engine.requests();
  ASSERT_EQ(seen.size(), 4u) << engine.describe();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(attempts[i]->at("parentSpanId").as_string(), root_id);
    EXPECT_EQ(seen[1 + i].header("traceparent").value_or("(none)"),
              "00-" + std::string(kClientTrace) + "-" + std::string(attempts[i]->at("spanId").as_string()) + "-01");
  }
  // The untraced ones keep their client's traceparent (or none).
  EXPECT_FALSE(seen[0].header("traceparent").has_value());
  EXPECT_EQ(seen[3].header("traceparent").value_or("(none)"), "00-11111111111111111111111111111111-2222222222222222-00");
  // The queue ends where the first attempt starts; the request holds them all.
  EXPECT_EQ(queue->at("endTimeUnixNano"), attempts[0]->at("startTimeUnixNano"));
  EXPECT_LE(root->at("startTimeUnixNano").as_string().size(), root->at("endTimeUnixNano").as_string().size());
}

TEST(Tracing, APreemptedRequestsSecondAttemptIsItsResume) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  FakeUpstream collector;
  collector.set_handler([](const RecordedRequest&) { return Respond{.status = 200, .body = "{}"}; });
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 1;  // what realtime needs must come from the batch request
  config.backend_extra = ", continue_final_message: true";
  config.alpha_classes = "[realtime, batch]";
  config.extra = "classes:\n"
                 "  - {name: realtime, min_share: 0.5, weight: 4}\n"
                 "  - {name: batch, preemptible: true, max_queue_wait_ms: 600000}\n"
                 "  - {name: chat}\n"  // the one class tenant beta may use
                 "scheduler: {preempt_after_ms: 50}\n"
                 "default_class: batch\n"
                 "tracing: {endpoint: \"http://127.0.0.1:" + std::to_string(collector.port()) +
                 "/v1/traces\", sample: 0, flush_ms: 50}\n";
  GatewayProcess gateway(config.to_yaml());
  HttpConnection batch(gateway.port());
  HttpRequest traced = gateway_post("/v1/chat/completions",
                                    sim_chat(R"("max_tokens":120,"min_tokens":120,"stream":true)", "Write on.", "m1"),
                                    kAlphaKey, "batch");
  traced.headers.emplace_back("traceparent", "00-" + std::string(kClientTrace) + "-" + std::string(kClientSpan) + "-01");
  batch.send(traced);
  ASSERT_EQ(batch.read_head().status, 200);
  ASSERT_GE(batch.read_events(10).size(), 10u) << "the batch request should be generating";
  const HttpResponse quick = http_call(gateway.port(), gateway_post("/v1/chat/completions",
                                                                    sim_chat(R"("max_tokens":4)", "Quick!", "m1"),
                                                                    kAlphaKey, "realtime"));
  EXPECT_EQ(quick.status, 200) << quick.body;
  batch.read_rest(Millis(20'000));
  ASSERT_TRUE(batch.complete()) << describe_output(gateway);

  std::vector<boost::json::object> attempts;
  const auto deadline = Clock::now() + Millis(10'000);
  for (;;) {
    attempts.clear();
    for (const auto& [id, s] : received_spans(collector)) {
      if (s.at("kind") == 3) attempts.push_back(s);
    }
    if (attempts.size() >= 2 || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(Millis(20));
  }
  ASSERT_EQ(attempts.size(), 2u) << collector.describe();
  std::sort(attempts.begin(), attempts.end(), [](const auto& a, const auto& b) {
    return a.at("startTimeUnixNano").as_string() < b.at("startTimeUnixNano").as_string();
  });
  EXPECT_EQ(attribute(attempts[0], "arbiter.attempt"), "first");
  EXPECT_EQ(attribute(attempts[1], "arbiter.attempt"), "resume");
  EXPECT_EQ(attempts[0].at("parentSpanId"), attempts[1].at("parentSpanId"));
  EXPECT_LE(attempts[0].at("endTimeUnixNano").as_string(), attempts[1].at("startTimeUnixNano").as_string());
}

TEST(Tracing, ADrainExportsTheSpansStillQueued) {
  FakeUpstream engine;
  FakeUpstream collector;
  collector.set_handler([](const RecordedRequest&) { return Respond{.status = 200, .body = "{}"}; });
  GatewayConfig config;
  config.backend_ports = {engine.port()};
  // Every request traced; nothing exported before a minute has passed.
  config.extra = "tracing: {endpoint: \"http://127.0.0.1:" + std::to_string(collector.port()) +
                 "/v1/traces\", sample: 1, flush_ms: 60000}\n";
  GatewayProcess gateway(config.to_yaml());
  ASSERT_EQ(http_call(gateway.port(), chat_request(chat_body())).status, 200);
  EXPECT_EQ(collector.request_count(), 0u);
  gateway.terminate();
  ASSERT_EQ(gateway.wait_exit(Millis(15'000)), 0) << describe_output(gateway);
  // The request, its queue wait, its attempt, the relay.
  const auto spans = received_spans(collector);
  EXPECT_GE(spans.size(), 3u) << collector.describe();
  EXPECT_TRUE(std::any_of(spans.begin(), spans.end(), [](const auto& s) { return s.second.at("kind") == 2; }));
}

}  // namespace
}  // namespace arbiter::test
