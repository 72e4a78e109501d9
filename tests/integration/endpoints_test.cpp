// The gateway's own endpoints, and the traces a relayed request leaves in
// the access log and the metrics.
#include <signal.h>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/harness.hpp"
#include "support/http_client.hpp"
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
  EXPECT_EQ(post_models.header("allow").value_or("(none)"), "GET");
  const auto get_chat = http_get(h.port(), "/v1/chat/completions", {bearer(kAlphaKey)});
  EXPECT_EQ(get_chat.status, 405);
  EXPECT_EQ(get_chat.header("allow").value_or("(none)"), "POST");
}

TEST(Endpoints, SighupIsIgnoredAndLogged) {
  Harness h;
  ASSERT_EQ(::kill(h.gateway().pid(), SIGHUP), 0);
  // Still serving; the log says why nothing happened.
  for (int i = 0; i < 50 && h.gateway().stderr_text().find("SIGHUP ignored") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(h.gateway().stderr_text().find("SIGHUP ignored"), std::string::npos) << h.gateway().stderr_text();
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
