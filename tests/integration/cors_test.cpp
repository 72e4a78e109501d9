// Browser apps calling the gateway from another origin (docs/configuration.md,
// `cors`): the preflight, the headers on answers (relayed, streamed, refused)
// and what an origin not allowed gets; off by default.
#include <gtest/gtest.h>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

constexpr const char* kOrigin = "https://chat.example.com";

GatewayConfig with_cors() {
  GatewayConfig config;
  config.extra = "cors: {allowed_origins: [\"https://chat.example.com\"], max_age_s: 120}\n";
  return config;
}

HttpRequest preflight(const std::string& origin,
                      const std::string& target = "/v1/chat/completions") {
  HttpRequest req{.method = "OPTIONS", .target = target, .headers = {}, .body = {}};
  req.headers.emplace_back("origin", origin);
  req.headers.emplace_back("access-control-request-method", "POST");
  req.headers.emplace_back("access-control-request-headers",
                           "authorization, content-type, x-stainless-os");
  return req;
}

TEST(Cors, APreflightFromAnAllowedOriginIsAnsweredWithoutReachingTheEngine) {
  Harness h(with_cors());
  const HttpResponse r = http_call(h.port(), preflight(kOrigin));
  ASSERT_EQ(r.status, 200) << r.body << describe_output(h.gateway());
  EXPECT_EQ(r.header("access-control-allow-origin").value_or("(none)"), kOrigin);
  EXPECT_EQ(r.header("access-control-allow-methods").value_or("(none)"), "POST");
  EXPECT_EQ(r.header("access-control-allow-headers").value_or("(none)"),
            "authorization, content-type, x-stainless-os");
  EXPECT_EQ(r.header("access-control-max-age").value_or("(none)"), "120");
  EXPECT_EQ(r.header("vary").value_or("(none)"), "Origin");
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(h.upstream().request_count(), 0u);
  // GET routes (the model list) have theirs too.
  const HttpResponse models = http_call(h.port(), preflight(kOrigin, "/v1/models"));
  EXPECT_EQ(models.status, 200);
  EXPECT_EQ(models.header("access-control-allow-methods").value_or("(none)"), "GET, HEAD");
}

TEST(Cors, AnswersToAnAllowedOriginCarryTheHeadersItsPageNeeds) {
  Harness h(with_cors());
  HttpRequest req = chat_request(chat_body());
  req.headers.emplace_back("origin", kOrigin);
  const HttpResponse relayed = http_call(h.port(), req);
  ASSERT_EQ(relayed.status, 200);
  EXPECT_EQ(relayed.header("access-control-allow-origin").value_or("(none)"), kOrigin);
  EXPECT_NE(relayed.header("access-control-expose-headers").value_or("").find("x-request-id"),
            std::string::npos);

  // A stream's head too.
  Stream s;
  s.payloads = chat_chunks(2);
  h.upstream().push(s);
  HttpRequest streamed = chat_request(chat_body(true));
  streamed.headers.emplace_back("origin", kOrigin);
  HttpConnection conn(h.port());
  conn.send(streamed);
  const HttpResponse head = conn.read_head();
  ASSERT_EQ(head.status, 200);
  EXPECT_EQ(head.header("access-control-allow-origin").value_or("(none)"), kOrigin);
  conn.read_rest();

  // And a refusal (a wrong key), so the page can read why.
  HttpRequest bad_key = chat_request(chat_body(), "sk-nobody");
  bad_key.headers.emplace_back("origin", kOrigin);
  const HttpResponse refused = http_call(h.port(), bad_key);
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.header("access-control-allow-origin").value_or("(none)"), kOrigin);
}

TEST(Cors, AnOriginNotAllowedGetsNoPermission) {
  Harness h(with_cors());
  const HttpResponse r = http_call(h.port(), preflight("https://evil.example.com"));
  EXPECT_EQ(r.status, 403);
  EXPECT_FALSE(r.header("access-control-allow-origin").has_value());
  EXPECT_NE(r.body.find("cors.allowed_origins"), std::string::npos) << r.body;
  HttpRequest req = chat_request(chat_body());
  req.headers.emplace_back("origin", "https://evil.example.com");
  const HttpResponse answer = http_call(h.port(), req);
  EXPECT_EQ(answer.status, 200)
      << "a server-side client may still call: the browser is what CORS guards";
  EXPECT_FALSE(answer.header("access-control-allow-origin").has_value());
}

TEST(Cors, OffByDefault) {
  Harness h;
  const HttpResponse r = http_call(h.port(), preflight(kOrigin));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("allow").value_or("(none)"), "POST");
  EXPECT_FALSE(r.header("access-control-allow-origin").has_value());
  HttpRequest req = chat_request(chat_body());
  req.headers.emplace_back("origin", kOrigin);
  EXPECT_FALSE(http_call(h.port(), req).header("access-control-allow-origin").has_value());
}

}  // namespace
}  // namespace arbiter::test
