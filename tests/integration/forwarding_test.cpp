// What the gateway passes to an engine besides the body: the client's
// end-to-end headers (W3C trace context and the like), never its API key,
// hop-by-hop fields or the gateway's own x-arbiter-* controls; and the
// engine's own key (backends[].api_key_env or api_key_file) as Bearer.
#include <stdlib.h>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "support/gateway_process.hpp"
#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

constexpr const char* kTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(Forwarding, EndToEndHeadersGoToTheEngineAndTheClientsKeyDoesNot) {
  ::setenv("ARBITER_TEST_ENGINE_KEY", "engine-secret-1", 1);
  GatewayConfig config;
  config.backend_extra = ", api_key_env: ARBITER_TEST_ENGINE_KEY";
  Harness h(config);
  HttpRequest req = chat_request(chat_body());
  req.headers.emplace_back("traceparent", kTrace);
  req.headers.emplace_back("tracestate", "vendor=abc");
  req.headers.emplace_back("x-team-budget", "ml-research");
  req.headers.emplace_back("connection", "keep-alive, x-hop-field");
  req.headers.emplace_back("x-hop-field", "local");
  req.headers.emplace_back("proxy-authorization", "Basic Zm9vOmJhcg==");
  req.headers.emplace_back("x-arbiter-class", "chat");
  ASSERT_EQ(http_call(h.port(), req).status, 200);

  ASSERT_EQ(h.upstream().request_count(), 1u);
  const RecordedRequest seen = h.upstream().requests()[0];
  EXPECT_EQ(seen.header("traceparent").value_or("(none)"), kTrace);
  EXPECT_EQ(seen.header("tracestate").value_or("(none)"), "vendor=abc");
  EXPECT_EQ(seen.header("x-team-budget").value_or("(none)"), "ml-research");
  EXPECT_EQ(seen.header("authorization").value_or("(none)"), "Bearer engine-secret-1");
  for (const char* gone : {"x-hop-field", "proxy-authorization", "x-arbiter-class"}) {
    EXPECT_FALSE(seen.header(gone).has_value()) << gone << " reached the engine";
  }
  for (const auto& [name, value] : seen.headers) {
    EXPECT_EQ(value.find(kAlphaKey), std::string::npos) << "the tenant's key reached the engine in " << name;
  }
}

// Each run of a request goes upstream under an id of its own: the client's
// x-request-id for the first, then "-2", "-3"... (an engine keying requests
// by that header refuses an id it still runs, and a failed run may still be
// running there). The client's answer keeps the client's id.
TEST(Forwarding, ARetryRunsUpstreamUnderAnIdOfItsOwnThatStartsWithTheClients) {
  Harness h;
  h.upstream().push(Respond{.status = 503, .body = R"({"error":{"message":"busy","type":"server_error"}})"});
  HttpRequest req = chat_request(chat_body());
  req.headers.emplace_back("x-request-id", "client-abc-123");
  const HttpResponse answer = http_call(h.port(), req);
  ASSERT_EQ(answer.status, 200) << describe_output(h.gateway());
  EXPECT_EQ(answer.header("x-request-id").value_or("(none)"), "client-abc-123");
  EXPECT_EQ(answer.header("x-arbiter-retries").value_or("(none)"), "1");
  const auto seen = h.upstream().requests();
  ASSERT_EQ(seen.size(), 2u) << h.upstream().describe();
  EXPECT_EQ(seen[0].header("x-request-id").value_or("(none)"), "client-abc-123");
  EXPECT_EQ(seen[1].header("x-request-id").value_or("(none)"), "client-abc-123-2");
}

// vLLM's request_id body field is the engine's key for the request too: a
// retry carries it with the same suffix; the first run's body is the
// client's, byte for byte.
TEST(Forwarding, ARetryCarriesTheBodysRequestIdWithItsRunsSuffix) {
  Harness h;
  h.upstream().push(Respond{.status = 503, .body = R"({"error":{"message":"busy","type":"server_error"}})"});
  const std::string body =
      R"({"model":"m1","request_id":"body-7","messages":[{"role":"user","content":"hi"}],"max_tokens":8})";
  ASSERT_EQ(http_call(h.port(), chat_request(body)).status, 200) << describe_output(h.gateway());
  const auto seen = h.upstream().requests();
  ASSERT_EQ(seen.size(), 2u) << h.upstream().describe();
  EXPECT_EQ(seen[0].body, body);
  const auto retried = boost::json::parse(seen[1].body).as_object();
  EXPECT_EQ(retried.at("request_id"), "body-7-2") << seen[1].body;
  EXPECT_EQ(retried.at("max_tokens"), 8);
}

TEST(Forwarding, AnEngineAtAnIpv6LiteralIsServedAndScraped) {
  // url: http://[::1]:port, as a URL writes an IPv6 address (the relay, the
  // engine monitor and the probes all connect to it without resolving).
  FakeUpstream engine(1, "::1");
  GatewayConfig config;
  config.backend_host = "[::1]";
  config.backend_ports = {engine.port()};
  config.engine_signals = true;
  GatewayProcess gateway(config.to_yaml());
  const auto answer = http_call(gateway.port(), chat_request(chat_body()));
  ASSERT_EQ(answer.status, 200) << answer.body;
  const std::string host = "[::1]:" + std::to_string(engine.port());
  // The monitor's scrapes reach it too, with the same Host.
  std::optional<RecordedRequest> chat, scrape;
  for (int i = 0; i < 200 && !(chat && scrape); ++i) {
    for (const RecordedRequest& r : engine.requests()) {
      if (r.method == "POST") chat = r;
      if (r.target == "/metrics") scrape = r;
    }
    if (!(chat && scrape)) std::this_thread::sleep_for(Millis(25));
  }
  ASSERT_TRUE(chat && scrape) << engine.describe();
  EXPECT_EQ(chat->header("host"), host);
  EXPECT_EQ(scrape->header("host"), host);
}

TEST(Forwarding, WithoutAnEngineKeyNoAuthorizationIsSent) {
  Harness h;
  ASSERT_EQ(http_call(h.port(), chat_request(chat_body())).status, 200);
  EXPECT_FALSE(h.upstream().requests()[0].header("authorization").has_value());
}

TEST(Forwarding, AMissingEngineKeyIsAConfigErrorAtStart) {
  ::unsetenv("ARBITER_TEST_NO_SUCH_KEY");
  GatewayConfig config;
  config.backend_ports = {1};
  config.backend_extra = ", api_key_env: ARBITER_TEST_NO_SUCH_KEY";
  try {
    GatewayProcess gateway(config.to_yaml());
    FAIL() << "the gateway started without its engine key";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("environment variable ARBITER_TEST_NO_SUCH_KEY is not set"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace arbiter::test
