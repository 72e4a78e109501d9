// Class caps: the interactive completion class rewrites max_tokens above
// 128 (or absent) to 128; chat is left alone, byte for byte.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

boost::json::object upstream_body(Harness& h, std::size_t i) {
  const auto reqs = h.upstream().requests();
  if (i >= reqs.size()) {
    ADD_FAILURE() << "upstream saw only " << reqs.size() << " requests";
    return {};
  }
  return boost::json::parse(reqs[i].body).as_object();
}

TEST(Caps, CompletionRouteCapsMaxTokensAt128) {
  Harness h;
  const HttpResponse capped = http_call(h.port(), completion_request(completion_body(1000)));
  ASSERT_EQ(capped.status, 200);
  EXPECT_EQ(capped.header("x-arbiter-max-tokens-capped").value_or("(none)"), "128");  // not silent
  ASSERT_EQ(http_call(h.port(), completion_request(completion_body())).status, 200);

  const auto asked_1000 = upstream_body(h, 0);
  EXPECT_EQ(asked_1000.at("max_tokens"), 128) << boost::json::serialize(asked_1000);
  EXPECT_EQ(asked_1000.at("prompt"), "Once upon a time");
  EXPECT_EQ(asked_1000.at("model"), "m1");
  const auto asked_nothing = upstream_body(h, 1);
  ASSERT_TRUE(asked_nothing.contains("max_tokens")) << boost::json::serialize(asked_nothing);
  EXPECT_EQ(asked_nothing.at("max_tokens"), 128);
  EXPECT_EQ(h.upstream().requests()[0].target, "/v1/completions");
}

TEST(Caps, CompletionUnderTheCapIsForwardedUnchanged) {
  Harness h;
  const auto body = completion_body(50);
  const HttpResponse r = http_call(h.port(), completion_request(body));
  ASSERT_EQ(r.status, 200);
  EXPECT_FALSE(r.header("x-arbiter-max-tokens-capped").has_value());
  ASSERT_EQ(h.upstream().request_count(), 1u);
  EXPECT_EQ(h.upstream().requests()[0].body, body);
}

TEST(Caps, ChatRouteIsNotCapped) {
  Harness h;
  const auto body = chat_body(false, 1000);
  ASSERT_EQ(http_call(h.port(), chat_request(body)).status, 200);
  ASSERT_EQ(h.upstream().request_count(), 1u);
  EXPECT_EQ(h.upstream().requests()[0].body, body);
}

TEST(Caps, EnginePriorityFollowsTheEngineKind) {
  // The chat class has priority 2 (lower runs first). vLLM runs lower values
  // first and gets 2; SGLang runs higher values first and gets -2, so the
  // order the engine applies is the gateway's in both.
  for (const auto& [engine, expected] : {std::pair{"vllm", 2}, std::pair{"sglang", -2}}) {
    SCOPED_TRACE(engine);
    Harness h(GatewayConfig{.backend_extra = std::string(", priority_scheduling: true, engine: ") + engine});
    ASSERT_EQ(http_call(h.port(), chat_request(chat_body(false, 10))).status, 200);
    EXPECT_EQ(upstream_body(h, 0).at("priority"), expected);
  }
}

}  // namespace
}  // namespace arbiter::test
