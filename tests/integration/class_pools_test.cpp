// Per-class pools (issue 12): a model's backends that name classes serve
// those classes only, as the BRIEF deploys completion and chat apart; the
// others serve the rest.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"

namespace arbiter::test {
namespace {

TEST(ClassPools, EachClassRunsOnlyOnItsPoolsBackends) {
  SimProcess completion_engine({"--profile", "tiny", "--model", "m1"});
  SimProcess chat_engine({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {completion_engine.port(), chat_engine.port()};
  config.backend_extras = {", name: ide, classes: [completion]", ", name: general"};
  GatewayProcess gateway(config.to_yaml());
  std::multiset<std::string> completions, chats;
  for (int i = 0; i < 6; ++i) {
    const HttpResponse c = http_call(
        gateway.port(),
        gateway_post("/v1/completions", R"({"model":"m1","prompt":"def f(","max_tokens":2})", kAlphaKey, "completion"),
        Millis(30'000));
    ASSERT_EQ(c.status, 200) << c.body;
    completions.insert(c.header("x-arbiter-backend").value_or("?"));
    const HttpResponse h = http_call(
        gateway.port(), gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":2)", "hi", "m1"), kAlphaKey, "chat"),
        Millis(30'000));
    ASSERT_EQ(h.status, 200) << h.body;
    chats.insert(h.header("x-arbiter-backend").value_or("?"));
  }
  EXPECT_EQ(std::set<std::string>(completions.begin(), completions.end()), std::set<std::string>{"ide"});
  EXPECT_EQ(std::set<std::string>(chats.begin(), chats.end()), std::set<std::string>{"general"});
  // One model for clients, however many pools serve it.
  const auto models = http_get(gateway.port(), "/v1/models", {bearer(kAlphaKey)});
  EXPECT_EQ(boost::json::parse(models.body).at("data").as_array().size(), 1u) << models.body;
}

}  // namespace
}  // namespace arbiter::test
