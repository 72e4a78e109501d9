// Tenant quotas through the real gateway in front of arbiter-sim (issue 14,
// in-process): a tenant hammered far over its token quota is admitted the
// quota (reserved at admission, settled with the engine's usage), refusals
// say when to retry and carry the x-ratelimit-* headers, another tenant is
// untouched, and nothing stays reserved however requests end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/metrics_text.hpp"

namespace arbiter::test {
namespace {

constexpr int kMaxTokens = 100;  // the sim generates exactly this many (min_tokens)

HttpRequest alpha_chat(bool stream = false) {
  const std::string extra = R"("max_tokens":100,"min_tokens":100)" + std::string(stream ? R"(,"stream":true)" : "");
  return gateway_post("/v1/chat/completions", sim_chat(extra, "Say hello.", "m1"), kAlphaKey, "chat");
}

double gauge(uint16_t port, std::string_view name, const Labels& labels) {
  return metric_value(http_get(port, "/metrics").body, name, labels).value_or(-1);
}

TEST(Quota, AHammeredTenantIsAdmittedItsTokenQuotaAndNoMore) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 16;
  constexpr double kQuota = 4000;  // tokens a minute: ~38 of these requests
  config.alpha_extra = ", quotas: [{tokens_per_minute: 4000}]";
  // The quota alone: at 10x its quota the traffic breaker would block the
  // tenant (its own test below).
  config.extra = "traffic_breaker: {enabled: false}\n";
  GatewayProcess gateway(config.to_yaml());

  // 16 clients asking as fast as they are answered (a 429 comes back at
  // once), for 3 s: far over the quota. A beta client (no quota) alongside.
  std::mutex mu;
  double admitted_tokens = 0;
  int admitted = 0, refused = 0, other = 0, beta_ok = 0, beta_other = 0;
  int64_t max_request_tokens = 0;
  const auto start = Clock::now();
  const auto stop = start + Millis(3'000);
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&] {
      while (Clock::now() < stop) {
        const HttpResponse r = http_call(gateway.port(), alpha_chat(), Millis(30'000));
        std::lock_guard lock(mu);
        if (r.status == 200) {
          const int64_t used = usage_tokens(r.json().at("usage"));
          admitted_tokens += static_cast<double>(used);
          max_request_tokens = std::max(max_request_tokens, used);
          ++admitted;
        } else if (r.status == 429) {
          ++refused;
          EXPECT_TRUE(r.header("retry-after").has_value());
          EXPECT_TRUE(r.header("x-ratelimit-remaining-tokens").has_value());
        } else {
          ++other;
        }
      }
    });
  }
  clients.emplace_back([&] {
    while (Clock::now() < stop) {
      const HttpResponse r = http_call(
          gateway.port(), gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":20)", "Hi.", "m1"), kBetaKey, "chat"),
          Millis(30'000));
      std::lock_guard lock(mu);
      (r.status == 200 ? beta_ok : beta_other)++;
    }
  });
  for (auto& t : clients) t.join();
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();

  // The quota: the whole minute's worth at once, then its refill while the
  // test ran. Requests use what they reserved within the prompt estimate's
  // error (a few tokens each), so the bound is 2% over that.
  const double allowed = kQuota * (1 + elapsed_s / 60);
  std::printf("admitted %d requests, %.0f tokens (quota over the run %.0f); refused %d\n", admitted, admitted_tokens,
              allowed, refused);
  EXPECT_LE(admitted_tokens, allowed * 1.02) << admitted << " admitted, " << refused << " refused";
  // And the quota is there to be used: every token of it but the last
  // request's worth was admitted.
  EXPECT_GE(admitted_tokens, kQuota - static_cast<double>(max_request_tokens)) << admitted << " admitted";
  EXPECT_GT(refused, 10 * admitted) << "the test must hammer far over the quota";
  EXPECT_EQ(other, 0);
  // Another tenant is not limited by alpha's quota.
  EXPECT_GT(beta_ok, 0);
  EXPECT_EQ(beta_other, 0);
  const Labels entry{{"owner", "tenant alpha"}, {"quota", "0"}};
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_quota_in_flight", entry), 0);
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_quota_reserved_tokens", entry), 0);
  EXPECT_GE(metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_quota_refused_total",
                         {{"tenant", "alpha"}, {"limit", "tokens_per_minute"}})
                .value_or(0),
            refused);
}

TEST(Quota, RefusalsSayWhenToRetryAndWhatIsLeft) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.alpha_extra = ", quotas: [{requests_per_minute: 2, tokens_per_minute: 1000}]";
  GatewayProcess gateway(config.to_yaml());

  const HttpResponse first = http_call(gateway.port(), alpha_chat());
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.header("x-ratelimit-limit-requests").value_or(""), "2");
  EXPECT_EQ(first.header("x-ratelimit-remaining-requests").value_or(""), "1");
  EXPECT_EQ(first.header("x-ratelimit-limit-tokens").value_or(""), "1000");
  ASSERT_TRUE(first.header("x-ratelimit-reset-requests").has_value());
  EXPECT_EQ(*first.header("x-ratelimit-reset-requests"), "30s");
  ASSERT_EQ(http_call(gateway.port(), alpha_chat()).status, 200);

  const HttpResponse third = http_call(gateway.port(), alpha_chat());
  ASSERT_EQ(third.status, 429) << third.body;
  EXPECT_EQ(third.json().at("error").at("code").as_string(), "rate_limit_exceeded");
  EXPECT_NE(third.json().at("error").at("message").as_string().find("requests_per_minute of tenant alpha"),
            std::string::npos)
      << third.body;
  // One request comes back every 30 s; the first went ~now.
  const int retry = std::stoi(third.header("retry-after").value_or("0"));
  EXPECT_GE(retry, 25);
  EXPECT_LE(retry, 30);
  EXPECT_EQ(third.header("x-ratelimit-remaining-requests").value_or(""), "0");

  // A request that alone is over the token limit can never fit: 400, not 429.
  const HttpResponse huge = http_call(
      gateway.port(),
      gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":5000)", "Hi.", "m1"), kAlphaKey, "chat"));
  EXPECT_EQ(huge.status, 400) << huge.body;
  EXPECT_EQ(huge.json().at("error").at("param").as_string(), "max_tokens");
  // So is one whose answers together are: 20 of 100 tokens each (`n`; the
  // estimate counted one answer, and the engine then generated twenty).
  const HttpResponse many = http_call(
      gateway.port(),
      gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":100,"n":20)", "Hi.", "m1"), kAlphaKey, "chat"));
  EXPECT_EQ(many.status, 400) << many.body;
  EXPECT_NE(many.json().at("error").at("message").as_string().find("x 20 answers"), std::string::npos) << many.body;
}

TEST(Quota, CancelledAndFailedRequestsLeaveNothingReserved) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 2;  // the rest queue: some are cancelled while queued
  config.upstream_first_byte_ms = 5'000;
  config.alpha_extra = ", quotas: [{tokens_per_minute: 1000000, max_concurrent: 100}]";
  GatewayProcess gateway(config.to_yaml());

  std::vector<std::thread> clients;
  for (int c = 0; c < 12; ++c) {
    clients.emplace_back([&, c] {
      try {
        // Streams cut after 60 ms (mid-stream or still queued), whole answers.
        (void)http_call(gateway.port(), alpha_chat(c % 2 == 0), Millis(c % 3 == 0 ? 60'000 : 60));
      } catch (const std::exception&) {
        // the client's own time-out: it went away
      }
    });
  }
  for (auto& t : clients) t.join();
  // Prompt over the sim's context: the engine refuses it (a failed request).
  const HttpResponse failed = http_call(
      gateway.port(),
      gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":9000)", "Hi.", "m1"), kAlphaKey, "chat"));
  EXPECT_GE(failed.status, 400) << failed.body;

  const Labels entry{{"owner", "tenant alpha"}, {"quota", "0"}};
  // The gateway notices each client leaving on its own schedule.
  const auto deadline = Clock::now() + Millis(10'000);
  while (Clock::now() < deadline && gauge(gateway.admin_port(), "arbiter_quota_in_flight", entry) != 0) {
    std::this_thread::sleep_for(Millis(20));
  }
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_quota_in_flight", entry), 0);
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_quota_reserved_tokens", entry), 0);
  // What the refused and failed ones reserved went back: well under the
  // million is left used (12 requests of ~100 tokens were served at most).
  EXPECT_GT(gauge(gateway.admin_port(), "arbiter_quota_remaining",
                  {{"owner", "tenant alpha"}, {"quota", "0"}, {"limit", "tokens_per_minute"}}),
            1'000'000 - 12 * 120);
}

TEST(Quota, ATenantAskingFarOverItsQuotaIsDegradedThenBlocked) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  // 1 request a second: over 20 in the 10 s window is orange, over 30 red.
  // A window of 10 s, not 1 s: the 40 requests must all arrive inside it,
  // and on a loaded 2-core machine starting 40 clients can take a second.
  config.alpha_extra = ", quotas: [{requests_per_minute: 60}]";
  config.alpha_classes = "[chat, batch]";
  config.extra = "traffic_breaker: {window_ms: 10000, hold_ms: 200, base_backoff_ms: 2000, degrade_class: batch}\n";
  GatewayProcess gateway(config.to_yaml());

  const HttpRequest asks_a_lot = gateway_post(
      "/v1/chat/completions", sim_chat(R"("max_tokens":1000)", "Say hello.", "m1"), kAlphaKey, "chat");
  // 40 at once (an answer takes a while: asked one after another they
  // would not be 40 within the window).
  std::vector<HttpResponse> answers(40);
  std::vector<std::thread> clients;
  for (int i = 0; i < 40; ++i) {
    clients.emplace_back([&, i] { answers[i] = http_call(gateway.port(), asks_a_lot, Millis(30'000)); });
  }
  for (auto& t : clients) t.join();
  // The quota (60 at once) admits all 40; the breaker does not.
  int green = 0, degraded = 0, blocked = 0;
  for (const HttpResponse& r : answers) {
    const std::string stage = r.header("x-arbiter-traffic-stage").value_or("green");
    if (r.status == 429) {
      ++blocked;
      EXPECT_EQ(stage, "red");
      EXPECT_NE(r.body.find("traffic breaker open for tenant alpha"), std::string::npos) << r.body;
      EXPECT_GE(std::stoi(r.header("retry-after").value_or("0")), 1);
    } else if (r.header("x-arbiter-degraded")) {
      ++degraded;
      // Capped, and moved to the lower class.
      EXPECT_EQ(*r.header("x-arbiter-degraded"), "max_tokens=256, class=batch");
      EXPECT_EQ(r.header("x-arbiter-class").value_or(""), "batch");
      EXPECT_LE(r.json().at("usage").at("completion_tokens").as_int64(), 256);
    } else {
      ++green;
      EXPECT_EQ(r.header("x-arbiter-class").value_or(""), "chat");
    }
  }
  // The 40 arrive within the 10 s window (they are sent at once): the
  // first 20 are green or yellow, then orange (degraded), and from the
  // 31st red.
  EXPECT_GE(green, 20) << degraded << " degraded, " << blocked << " blocked";
  EXPECT_GT(degraded, 0);
  EXPECT_GT(blocked, 0);
  const std::string text = http_get(gateway.admin_port(), "/metrics").body;
  EXPECT_GE(metric_value(text, "arbiter_traffic_breaker_transitions_total",
                         {{"tenant", "alpha"}, {"from", "orange"}, {"to", "red"}})
                .value_or(0),
            1);
  EXPECT_NE(gateway.stderr_text().find("\"event\":\"traffic_breaker\""), std::string::npos);
}

TEST(Quota, StreamsAreChargedWhatTheyGeneratedNotWhatTheyReserved) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  // A day's tokens: the bucket refills ~1 token a second, so what is left
  // shows what each request was charged.
  config.alpha_extra = ", quotas: [{tokens_per_day: 100000}]";
  // The gateway does not ask the engine for a stream's usage here, so a
  // stream whose client did not is counted by its events (the fallback).
  config.backend_extra = ", stream_usage: false";
  GatewayProcess gateway(config.to_yaml());
  const Labels tokens_left{{"owner", "tenant alpha"}, {"quota", "0"}, {"limit", "tokens_per_day"}};

  // Reserves ~1,000 (max_tokens) and generates a few: settled with the
  // stream's data events, one token each (the role and finish chunks too),
  // plus the prompt's estimate (a few tokens).
  const HttpResponse plain = http_call(
      gateway.port(),
      gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":1000,"min_tokens":10,"stream":true)", "Hi.", "m1"),
                   kAlphaKey, "chat"));
  ASSERT_EQ(plain.status, 200);
  const std::size_t data_events = sse_payloads(plain.body).size();
  ASSERT_GE(data_events, 11u);
  ASSERT_LT(data_events, 900u) << "the test needs a stream well under its reservation";
  const double charged = 100'000 - gauge(gateway.admin_port(), "arbiter_quota_remaining", tokens_left);
  EXPECT_GE(charged, static_cast<double>(data_events));
  EXPECT_LE(charged, static_cast<double>(data_events) + 10) << "reserved ~1,000";
  const double after_plain = 100'000 - charged;

  // With the usage chunk the client asked for: exactly the engine's usage.
  const HttpResponse counted = http_call(
      gateway.port(),
      gateway_post("/v1/chat/completions",
                   sim_chat(R"("max_tokens":1000,"min_tokens":10,"stream":true,"stream_options":{"include_usage":true})",
                            "Hi.", "m1"),
                   kAlphaKey, "chat"));
  ASSERT_EQ(counted.status, 200);
  const int64_t used = stream_usage_tokens(counted.body);
  ASSERT_GT(used, 0);
  const double after_counted = gauge(gateway.admin_port(), "arbiter_quota_remaining", tokens_left);
  EXPECT_NEAR(after_plain - after_counted, static_cast<double>(used), 3);
}

}  // namespace
}  // namespace arbiter::test
