// The result cache shared by replicas through a real redis-server (issue
// 44, `cache.redis`): what one gateway kept, another answers without the
// engine; Redis killed mid-run, answers go on and each gateway's own cache
// keeps serving (a miss, never an error).
#include <gtest/gtest.h>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/redis_server.hpp"

namespace arbiter::test::shared_cache_test {
namespace {

std::string shared_cache_config(uint16_t sim_port, const RedisServer& redis) {
  GatewayConfig config;
  config.backend_ports = {sim_port};
  config.extra = "cache: {redis: \"" + redis.address() + "\", redis_timeout_ms: 200}\n";
  return config.to_yaml();
}

HttpResponse ask(const GatewayProcess& gateway, const std::string& content) {
  HttpRequest r = sim_post("/v1/chat/completions", sim_chat("\"temperature\":0,\"max_tokens\":8", content, "m1"));
  r.headers.emplace_back("authorization", std::string("Bearer ") + kAlphaKey);
  return http_call(gateway.port(), r);
}

double answers_generated(SimProcess& sim) {
  return sim.metric("vllm:request_success_total", {{"model_name", "m1"}, {"finished_reason", "length"}}).value_or(0) +
         sim.metric("vllm:request_success_total", {{"model_name", "m1"}, {"finished_reason", "stop"}}).value_or(0);
}

TEST(SharedCache, WhatOneReplicaKeptAnotherAnswersWithoutTheEngine) {
  RedisServer redis;
  SimProcess sim({"--model", "m1"});
  GatewayProcess a(shared_cache_config(sim.port(), redis));
  GatewayProcess b(shared_cache_config(sim.port(), redis));
  const HttpResponse fresh = ask(a, "Name the largest planet.");
  ASSERT_EQ(fresh.status, 200) << fresh.body << describe_output(a);
  EXPECT_EQ(fresh.header("x-arbiter-cache"), "miss");
  ASSERT_TRUE(poll_until([&] { return redis.cli("--scan --pattern 'arbiter:cache:*'").starts_with("arbiter:cache:"); },
                         Millis(10'000)))
      << describe_output(a);
  const HttpResponse shared = ask(b, "Name the largest planet.");
  ASSERT_EQ(shared.status, 200);
  EXPECT_EQ(shared.header("x-arbiter-cache"), "hit");
  EXPECT_EQ(shared.json().at("choices").at(0).at("message").at("content"),
            fresh.json().at("choices").at(0).at("message").at("content"));
  EXPECT_EQ(b.wait_for_metric("arbiter_cache_requests_total", [](double v) { return v >= 1; }, Millis(10'000),
                              {{"model", "m1"}, {"class", "chat"}, {"result", "shared"}}),
            1);
  EXPECT_EQ(answers_generated(sim), 1);  // b's answer came from a's generation
  // The admin flush drops the shared copy too: a third replica misses.
  const HttpResponse flushed = http_post(a.admin_port(), "/admin/cache/flush", "");
  ASSERT_EQ(flushed.status, 200) << flushed.body;
  EXPECT_EQ(flushed.json().at("flushed").at("shared"), 1);
  EXPECT_EQ(redis.cli("--scan --pattern 'arbiter:cache:*'"), "");
  GatewayProcess c(shared_cache_config(sim.port(), redis));
  EXPECT_EQ(ask(c, "Name the largest planet.").header("x-arbiter-cache"), "miss");
  // Another tenant on b: a miss, though the body is the same.
  HttpRequest beta = sim_post("/v1/chat/completions",
                              sim_chat("\"temperature\":0,\"max_tokens\":8", "Name the largest planet.", "m1"));
  beta.headers.emplace_back("authorization", std::string("Bearer ") + kBetaKey);
  EXPECT_EQ(http_call(b.port(), beta).header("x-arbiter-cache"), "miss");
}

TEST(SharedCache, RedisKilledMidRunAnswersGoOnFromTheEnginesAndTheLocalCache) {
  RedisServer redis;
  SimProcess sim({"--model", "m1"});
  GatewayProcess gateway(shared_cache_config(sim.port(), redis));
  ASSERT_EQ(ask(gateway, "Name a red fruit.").status, 200);
  ASSERT_GE(gateway.wait_for_metric("arbiter_cache_fills_total", [](double v) { return v >= 1; }, Millis(10'000),
                                    {{"model", "m1"}, {"class", "chat"}, {"result", "stored"}})
                .value_or(0),
            1);
  redis.kill();
  // Kept locally: still a hit.
  const HttpResponse local = ask(gateway, "Name a red fruit.");
  EXPECT_EQ(local.status, 200);
  EXPECT_EQ(local.header("x-arbiter-cache"), "hit");
  // New questions: the engine answers (the shared store's failure is a miss), kept locally.
  for (const std::string q : {"Name a green fruit.", "Name a blue fruit.", "Name a yellow fruit."}) {
    const HttpResponse r = ask(gateway, q);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-arbiter-cache"), "miss");
  }
  ASSERT_GE(gateway.wait_for_metric("arbiter_cache_fills_total", [](double v) { return v >= 4; }, Millis(10'000),
                                    {{"model", "m1"}, {"class", "chat"}, {"result", "stored"}})
                .value_or(0),
            4);
  EXPECT_EQ(ask(gateway, "Name a green fruit.").header("x-arbiter-cache"), "hit");
  EXPECT_GE(gateway.wait_for_metric("arbiter_cache_shared_errors_total", [](double v) { return v >= 1; },
                                    Millis(10'000), {{"kind", "unreachable"}})
                .value_or(0),
            1)
      << describe_output(gateway);
}

}  // namespace
}  // namespace arbiter::test::shared_cache_test
