// Per-class pools (issue 12): a model's backends that name classes serve
// those classes only, as the BRIEF deploys completion and chat apart; the
// others serve the rest. A pool that lends serves the others' work when
// their own backends are full.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
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
  config.alpha_classes = "[critical, completion, chat, batch]";  // claims completion
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

// One slot per backend; "ide" serves completions (and lends when asked),
// "general" the rest. The first chat streams 7,000 tokens on general.
struct Borrowing {
  explicit Borrowing(bool lend) {
    GatewayConfig config;
    config.backend_ports = {ide_engine.port(), general_engine.port()};
    config.max_concurrency = 1;
    config.backend_extras = {std::string(", name: ide, classes: [completion]") + (lend ? ", lend: true" : ""),
                             ", name: general"};
    gateway.emplace(config.to_yaml());
    long_chat.emplace(gateway->port());
    long_chat->send(gateway_post("/v1/chat/completions",
                                 sim_chat(R"("max_tokens":7000,"min_tokens":7000,"stream":true)", "go on", "m1"),
                                 kAlphaKey, "chat"));
    const HttpResponse head = long_chat->read_head();
    EXPECT_EQ(head.header("x-arbiter-backend").value_or("?"), "general");
    EXPECT_GE(long_chat->read_events(2).size(), 2u);
  }
  std::future<HttpResponse> second_chat() {
    return std::async(std::launch::async, [port = gateway->port()] {
      return http_call(port,
                       gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":2)", "hi", "m1"), kAlphaKey, "chat"),
                       Millis(30'000));
    });
  }

  SimProcess ide_engine{{"--profile", "tiny", "--model", "m1"}};
  SimProcess general_engine{{"--profile", "tiny", "--model", "m1"}};
  std::optional<GatewayProcess> gateway;
  std::optional<HttpConnection> long_chat;
};

TEST(ClassPools, ALendingPoolServesAChatAboutToMissItsSlo) {
  Borrowing b(/*lend=*/true);
  // Chat's TTFT SLO is 2 s: after 1 s at home it borrows the idle ide slot.
  const HttpResponse r = b.second_chat().get();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-arbiter-backend").value_or("?"), "ide");
  EXPECT_GE(std::stod(r.header("x-arbiter-queue-ms").value_or("0")), 900);
  const auto metrics = http_get(b.gateway->admin_port(), "/metrics").body;
  EXPECT_EQ(metric_value(metrics, "arbiter_scheduler_events_total", {{"class", "chat"}, {"event", "borrowed"}}), 1);
}

TEST(ClassPools, APoolThatDoesNotLendKeepsItsIdleSlot) {
  Borrowing b(/*lend=*/false);
  auto second = b.second_chat();
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(2'000)), std::future_status::timeout)
      << "served although general was full and ide does not lend";
  b.long_chat->close_abruptly();  // frees general
  const HttpResponse r = second.get();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-arbiter-backend").value_or("?"), "general");
}

}  // namespace
}  // namespace arbiter::test
