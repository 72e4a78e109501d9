// Requests the gateway refuses by itself, with OpenAI-shaped errors, before
// anything reaches an engine.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

// The error object of an OpenAI error body; fails the test if malformed.
boost::json::object error_of(const HttpResponse& res) {
  boost::system::error_code ec;
  auto v = boost::json::parse(res.body, ec);
  EXPECT_FALSE(ec) << "error body is not JSON: " << res.body;
  if (ec || !v.is_object() || !v.as_object().contains("error")) {
    ADD_FAILURE() << "not an OpenAI error body: " << res.body;
    return {};
  }
  auto err = v.as_object().at("error").as_object();
  for (const char* key : {"message", "type", "param", "code"}) {
    EXPECT_TRUE(err.contains(key)) << "error body lacks " << key << ": " << res.body;
  }
  return err;
}

std::string str(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string("<missing>");
}

TEST(RequestErrors, OversizedBodyGives413) {
  GatewayConfig cfg;
  cfg.max_body_bytes = 1024;
  Harness h(cfg);
  const std::string big = R"({"model":"m1","messages":[{"role":"user","content":")" +
                          std::string(4000, 'x') + R"("}]})";
  const auto res = http_call(h.port(), chat_request(big));
  EXPECT_EQ(res.status, 413) << res.body;
  error_of(res);
  EXPECT_EQ(h.upstream().request_count(), 0u);

  // Just under the limit still goes through.
  const std::string small = R"({"model":"m1","messages":[{"role":"user","content":")" +
                            std::string(900, 'x') + R"("}]})";
  EXPECT_EQ(http_call(h.port(), chat_request(small)).status, 200);
}

TEST(RequestErrors, InvalidJsonGives400) {
  Harness h;
  const auto res = http_call(h.port(), chat_request(R"({"model": "m1", "messages": [)"));
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_EQ(str(error_of(res), "code"), "invalid_json");
  EXPECT_EQ(h.upstream().request_count(), 0u);
}

TEST(RequestErrors, MissingModelGives400) {
  Harness h;
  const auto res = http_call(h.port(), chat_request(R"({"messages":[{"role":"user","content":"hi"}]})"));
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_EQ(str(error_of(res), "code"), "invalid_request");
  EXPECT_EQ(h.upstream().request_count(), 0u);
}

TEST(RequestErrors, UnknownModelGives404) {
  Harness h;
  const auto res = http_call(h.port(), chat_request(chat_body(false, std::nullopt, "no-such-model")));
  EXPECT_EQ(res.status, 404) << res.body;
  EXPECT_EQ(str(error_of(res), "code"), "model_not_found");
  EXPECT_EQ(h.upstream().request_count(), 0u);
}

TEST(RequestErrors, BadApiKeyGives401AndNoKeyIsEverLogged) {
  Harness h;
  const std::string wrong_key = "sk-wrong-9d8c7b6a5f4e";
  const auto bad = http_call(h.port(), chat_request(chat_body(), wrong_key));
  EXPECT_EQ(bad.status, 401) << bad.body;
  EXPECT_EQ(str(error_of(bad), "type"), "authentication_error");

  HttpRequest no_key = chat_request(chat_body());
  no_key.headers = {{"content-type", "application/json"}};
  const auto missing = http_call(h.port(), no_key);
  EXPECT_EQ(missing.status, 401) << missing.body;
  EXPECT_EQ(str(error_of(missing), "type"), "authentication_error");
  EXPECT_EQ(h.upstream().request_count(), 0u);

  const auto good = http_call(h.port(), chat_request(chat_body()));
  EXPECT_EQ(good.status, 200) << good.body;

  // All three requests are logged (so the check below is not vacuous)...
  ASSERT_TRUE(h.gateway()
                  .wait_for_log([](const auto& l) { return l.contains("status") && l.at("status") == 200; },
                                Millis(2'000))
                  .has_value());
  h.gateway().terminate();
  EXPECT_EQ(h.gateway().wait_exit(Millis(10'000)), 0);
  const std::string out = h.gateway().stdout_text() + h.gateway().stderr_text();
  EXPECT_GE(h.gateway().access_log().size(), 3u);
  // ...and no key, wrong or right, appears anywhere in the output.
  EXPECT_EQ(out.find(wrong_key), std::string::npos) << "a rejected API key was logged";
  EXPECT_EQ(out.find(kAlphaKey), std::string::npos) << "a tenant's API key was logged";
  EXPECT_EQ(out.find("Bearer"), std::string::npos) << "an Authorization header was logged";
}

TEST(RequestErrors, ClassClaimOutsideTenantAllowanceGives403) {
  GatewayConfig granted;
  granted.alpha_classes = "[critical, completion, chat, batch]";
  Harness h(granted);
  // beta may only use chat.
  auto claim = chat_request(chat_body(), kBetaKey);
  claim.headers.emplace_back("x-arbiter-class", "critical");
  const auto forbidden = http_call(h.port(), claim);
  EXPECT_EQ(forbidden.status, 403) << forbidden.body;
  error_of(forbidden);
  EXPECT_EQ(h.upstream().request_count(), 0u);

  auto unknown = chat_request(chat_body(), kAlphaKey);
  unknown.headers.emplace_back("x-arbiter-class", "no-such-class");
  const auto bad = http_call(h.port(), unknown);
  EXPECT_EQ(bad.status, 400) << bad.body;
  error_of(bad);

  // A tenant with no list of its own may not claim a class that outranks
  // the default either; alpha lists critical, and its claim is honoured.
  Harness h2;  // alpha without a list
  auto promote = chat_request(chat_body(), kAlphaKey);
  promote.headers.emplace_back("x-arbiter-class", "critical");
  const auto promoted = http_call(h2.port(), promote);
  EXPECT_EQ(promoted.status, 403) << promoted.body;
  EXPECT_NE(promoted.body.find("outranks the default class"), std::string::npos) << promoted.body;

  Stream s;
  s.payloads = chat_chunks(1);
  h.upstream().push(s);
  auto allowed = chat_request(chat_body(true), kAlphaKey);
  allowed.headers.emplace_back("x-arbiter-class", "critical");
  HttpConnection conn(h.port());
  conn.send(allowed);
  const auto head = conn.read_head();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("x-arbiter-class"), "critical");
  conn.read_rest();
}

TEST(RequestErrors, UnknownRouteGives404) {
  Harness h;
  const auto res = http_post(h.port(), "/v1/embeddingz", "{}", {bearer(kAlphaKey)});
  EXPECT_EQ(res.status, 404) << res.body;
  error_of(res);
}

}  // namespace
}  // namespace arbiter::test
