// The gateway's own endpoints, and the traces a relayed request leaves in
// the access log and the metrics.
#include <signal.h>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/raw_socket.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

TEST(Endpoints, HealthReadyAndModels) {
  Harness h;
  EXPECT_EQ(http_get(h.port(), "/healthz").status, 200);
  EXPECT_EQ(http_get(h.port(), "/readyz").status, 200);
  const auto models = http_get(h.port(), "/v1/models", {bearer(kAlphaKey)});
  ASSERT_EQ(models.status, 200) << models.body;
  const auto list = boost::json::parse(models.body).at("data").as_array();
  ASSERT_EQ(list.size(), 1u) << models.body;
  EXPECT_EQ(list[0].at("id"), "m1");
}

// OpenAI's "retrieve model" (openai-python's client.models.retrieve), with
// the name as it is ("org/name") or its '/' encoded. It answered 404 "no
// route" before.
TEST(Endpoints, AModelIsRetrievedByName) {
  GatewayConfig config;
  config.models_extra = "  - name: org/big+model\n    backends:\n      - {url: \"http://127.0.0.1:9\", name: b0}\n";
  Harness h(config);
  const auto m1 = http_get(h.port(), "/v1/models/m1", {bearer(kAlphaKey)});
  ASSERT_EQ(m1.status, 200) << m1.body;
  const auto object = boost::json::parse(m1.body).as_object();
  EXPECT_EQ(object.at("id"), "m1");
  EXPECT_EQ(object.at("object"), "model");
  for (const std::string target : {"/v1/models/org/big+model", "/v1/models/org%2Fbig%2Bmodel"}) {
    const auto big = http_get(h.port(), target, {bearer(kAlphaKey)});
    ASSERT_EQ(big.status, 200) << target << ": " << big.body;
    EXPECT_EQ(boost::json::parse(big.body).at("id"), "org/big+model") << target;
  }
  for (const std::string target : {"/v1/models/m2", "/v1/models/", "/v1/models/m1%", "/v1/models/m1/"}) {
    const auto missing = http_get(h.port(), target, {bearer(kAlphaKey)});
    EXPECT_EQ(missing.status, 404) << target << ": " << missing.body;
    EXPECT_EQ(boost::json::parse(missing.body).at("error").at("code"), "model_not_found") << target;
  }
  EXPECT_EQ(http_get(h.port(), "/v1/models/m1").status, 401) << "authenticated like inference";
}

// RFC 9110 9.3.2: every GET route answers HEAD with the GET's head and no
// body (before, only /healthz and /readyz did; /v1/models and /metrics
// answered 405).
TEST(Endpoints, HeadOfEveryGetRouteIsItsHeadWithoutABody) {
  Harness h;
  // /metrics is the admin listener's.
  const std::vector<std::pair<uint16_t, std::string>> routes{
      {h.port(), "/v1/models"}, {h.port(), "/v1/models/m1"}, {h.admin_port(), "/metrics"}, {h.port(), "/healthz"}};
  for (const auto& [port, path] : routes) {
    const auto get = http_get(port, path, {bearer(kAlphaKey)});
    ASSERT_EQ(get.status, 200) << path;
    RawSocket s(port);
    s.send("HEAD " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + std::string(kAlphaKey) +
           "\r\n\r\nGET /nope HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n");
    const std::string got = s.read_until_close(Millis(5'000));
    ASSERT_TRUE(got.starts_with("HTTP/1.1 200")) << path << ": " << got;
    const auto head_end = got.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << got;
    EXPECT_NE(got.substr(0, head_end).find("Content-Length: "), std::string::npos) << got;
    EXPECT_TRUE(got.substr(head_end + 4).starts_with("HTTP/1.1 404")) << path << ": a body followed the head: " << got;
  }
}

TEST(Endpoints, EveryAnswerCarriesTheRequestIdAndWrongMethodsGet405) {
  Harness h;
  const Headers with_id{{"x-request-id", "itest-id-7"}};
  const auto missing = http_get(h.port(), "/nope", with_id);
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.header("x-request-id").value_or("(none)"), "itest-id-7");
  const auto unauthorised = http_get(h.port(), "/v1/models", with_id);
  EXPECT_EQ(unauthorised.status, 401) << unauthorised.body;
  EXPECT_EQ(unauthorised.header("x-request-id").value_or("(none)"), "itest-id-7");
  // Without one, the gateway makes one up.
  EXPECT_FALSE(http_get(h.port(), "/nope").header("x-request-id").value_or("").empty());

  const auto post_models = http_post(h.port(), "/v1/models", "{}", {bearer(kAlphaKey)});
  EXPECT_EQ(post_models.status, 405) << post_models.body;
  EXPECT_EQ(post_models.header("allow").value_or("(none)"), "GET, HEAD");
  const auto get_chat = http_get(h.port(), "/v1/chat/completions", {bearer(kAlphaKey)});
  EXPECT_EQ(get_chat.status, 405);
  EXPECT_EQ(get_chat.header("allow").value_or("(none)"), "POST");
}

TEST(Endpoints, SighupRereadsTheConfigFile) {
  Harness h;
  ASSERT_EQ(::kill(h.gateway().pid(), SIGHUP), 0);
  // The file did not change: the reload finds it running already, and the
  // gateway goes on serving (config_reload_test.cpp covers real changes).
  EXPECT_EQ(h.gateway().wait_for_metric("arbiter_config_reloads_total", [](double v) { return v >= 1; },
                                        std::chrono::milliseconds(10'000), {{"result", "unchanged"}}),
            1)
      << h.gateway().stderr_text();
  EXPECT_EQ(http_get(h.port(), "/healthz").status, 200);
  EXPECT_EQ(http_call(h.port(), chat_request(chat_body())).status, 200);
}

TEST(Endpoints, RelayedRequestIsLoggedAndCounted) {
  Harness h;
  auto req = chat_request(chat_body());
  req.headers.emplace_back("x-request-id", "itest-log-1");
  ASSERT_EQ(http_call(h.port(), req).status, 200);

  const auto line = h.gateway().wait_for_log(
      [](const boost::json::object& l) {
        const auto* id = l.if_contains("request_id");
        return id && *id == "itest-log-1";
      },
      Millis(2'000));
  ASSERT_TRUE(line.has_value()) << "no access-log line for request itest-log-1";
  for (const char* key : {"ts", "request_id", "tenant", "class", "model", "backend", "route", "status",
                          "bytes_out", "queue_ms", "upstream_ms", "duration_ms"}) {
    EXPECT_TRUE(line->contains(key)) << "access log lacks " << key << ": " << boost::json::serialize(*line);
  }
  EXPECT_EQ(line->at("status"), 200);
  EXPECT_EQ(line->at("tenant"), "alpha");
  EXPECT_EQ(line->at("class"), "chat");
  EXPECT_EQ(line->at("model"), "m1");

  const Labels labels{{"model", "m1"}, {"class", "chat"}, {"tenant", "alpha"}, {"status", "200"}};
  EXPECT_EQ(h.metric("arbiter_requests_total", labels), 1.0);
  EXPECT_EQ(h.metric("arbiter_requests_in_flight"), 0.0);
  EXPECT_EQ(h.metric("arbiter_request_duration_seconds_count", {{"model", "m1"}, {"class", "chat"}}), 1.0);
  EXPECT_TRUE(h.metric("arbiter_time_to_first_byte_seconds_count").has_value());
}

}  // namespace
}  // namespace arbiter::test
