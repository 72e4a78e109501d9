// The gateway's own endpoints, and the traces a relayed request leaves in
// the access log and the metrics.
#include <boost/json.hpp>
#include <gtest/gtest.h>

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
