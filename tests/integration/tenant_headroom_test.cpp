// Tenant isolation through the gateway. Tenant headroom
// (scheduler.tenant_headroom): a tenant flooding a class leaves the pool's
// last slots to the other tenants, whose next request starts at once, and
// its own held requests say why they waited. Tenant caps
// (tenants[].max_running): a tenant's requests beyond its cap wait. The
// fair-share cap (scheduler.tenant_fair_cap, on by default): a flooding
// tenant's beyond its multiple of its share take only slots nobody else
// wants, and never one the others' next request needs.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/metrics_text.hpp"

namespace arbiter::test {
namespace {

double gauge(uint16_t port, std::string_view name) {
  return metric_value(http_get(port, "/metrics").body, name, {}).value_or(0);
}

// A chat request of `key`'s tenant for `max_tokens`, sent on its own thread.
std::future<HttpResponse> chat_async(uint16_t port, const char* key, int max_tokens) {
  const std::string extra = R"("max_tokens":)" + std::to_string(max_tokens);
  return std::async(std::launch::async, [port, key, extra] {
    return http_call(port, gateway_post("/v1/chat/completions", sim_chat(extra, "hi", "m1"), key, "chat"),
                     Millis(60'000));
  });
}

// Waits for every call: each answered 200, `count` of them saying they
// waited for `reason`.
void expect_waited_for(std::vector<std::future<HttpResponse>>& calls, std::string_view reason, int count) {
  int waited = 0;
  for (auto& f : calls) {
    const HttpResponse r = f.get();
    ASSERT_EQ(r.status, 200) << r.body;
    waited += r.header("x-arbiter-wait-reason").value_or("") == reason;
  }
  EXPECT_EQ(waited, count) << reason;
}

// beta's two calls: each answered 200 without having waited in the queue.
void expect_started_at_once(std::future<HttpResponse>& first, std::future<HttpResponse>& second) {
  for (auto* f : {&first, &second}) {
    const HttpResponse r = f->get();
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(r.header("x-arbiter-wait-reason").has_value()) << *r.header("x-arbiter-wait-reason");
  }
}

void wait_for_gauge(uint16_t port, std::string_view name, double value) {
  const auto deadline = Clock::now() + Millis(10'000);
  while (gauge(port, name) != value) {
    ASSERT_LT(Clock::now(), deadline) << name << " never reached " << value << " (" << gauge(port, name) << ")";
    std::this_thread::sleep_for(Millis(5));
  }
}

TEST(TenantHeadroom, AFloodingTenantLeavesTheLastSlotsToTheOthers) {
  // Every request holds its slot at least 3 s (the engine waits that long
  // before it starts on it), so the slots are what the test counts.
  SimProcess sim({"--profile", "tiny", "--model", "m1", "--added-latency-ms", "3000"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 6;
  config.extra = "scheduler: {tenant_headroom: 0.25}\n";  // ceil(1.5): 2 of the 6 slots kept
  GatewayProcess gateway(config.to_yaml());
  const auto call = [&](const char* key, int max_tokens) { return chat_async(gateway.port(), key, max_tokens); };

  // beta has a small request running: it is a tenant with work.
  auto beta_first = call(kBetaKey, 10);
  wait_for_gauge(gateway.admin_port(), "arbiter_backend_in_flight", 1);
  // alpha sends six large ones. Its first starts within its share; after
  // it alpha has had nearly all of the class's recent service, over 75%
  // (halfway from its half among the two tenants with work to all): it
  // floods, takes two more while more than 2 slots are free, and its other
  // three wait beside the 2 free slots.
  std::vector<std::future<HttpResponse>> alpha;
  for (int i = 0; i < 6; ++i) alpha.push_back(call(kAlphaKey, 400));
  wait_for_gauge(gateway.admin_port(), "arbiter_queue_depth", 3);
  wait_for_gauge(gateway.admin_port(), "arbiter_backend_in_flight", 4);
  std::this_thread::sleep_for(Millis(300));
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_backend_in_flight"), 4) << "a held request started";
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_queue_depth"), 3);

  // beta's next request takes a kept slot at once, ahead of alpha's three.
  auto beta_second = call(kBetaKey, 10);
  wait_for_gauge(gateway.admin_port(), "arbiter_backend_in_flight", 5);
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_queue_depth"), 3);

  expect_started_at_once(beta_first, beta_second);
  if (HasFatalFailure()) return;
  // Everything is served in the end: alpha's held requests once slots free
  // beyond the headroom (and once beta has no work, it is alone).
  expect_waited_for(alpha, "tenant_headroom", 3);
  if (HasFatalFailure()) return;
  // Counted as each exchange ends, which may be just after its last byte.
  const auto counted = [&] {
    return metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_queue_waits_total",
                        {{"reason", "tenant_headroom"}})
        .value_or(0);
  };
  const auto deadline = Clock::now() + Millis(5'000);
  while (counted() < 3 && Clock::now() < deadline) std::this_thread::sleep_for(Millis(5));
  EXPECT_EQ(counted(), 3);
}

// alpha may hold 2 of the 6 slots (`cap`, a tenants[] setting): its 4
// requests start 2 at a time, beta's starts at once beside them, and
// alpha's last two say they waited for alpha's cap.
void expect_alpha_capped_at_two(const std::string& cap) {
  SimProcess sim({"--profile", "tiny", "--model", "m1", "--added-latency-ms", "1500"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 6;
  config.alpha_extra = ", " + cap;
  GatewayProcess gateway(config.to_yaml());
  const auto call = [&](const char* key) { return chat_async(gateway.port(), key, 5); };
  std::vector<std::future<HttpResponse>> alpha;
  for (int i = 0; i < 4; ++i) alpha.push_back(call(kAlphaKey));
  wait_for_gauge(gateway.admin_port(), "arbiter_queue_depth", 2);
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_backend_in_flight"), 2);
  auto beta = call(kBetaKey);
  wait_for_gauge(gateway.admin_port(), "arbiter_backend_in_flight", 3);
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_queue_depth"), 2);
  const HttpResponse b = beta.get();
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_FALSE(b.header("x-arbiter-wait-reason").has_value());
  expect_waited_for(alpha, "tenant_cap", 2);
}

TEST(TenantCap, ATenantsRequestsBeyondItsMaxRunningWaitWhileOthersStart) {
  expect_alpha_capped_at_two("max_running: 2");
}

TEST(TenantCap, ATenantsMaxShareIsSlotsOfThePool) {
  expect_alpha_capped_at_two("max_share: 0.34");  // 2.04 of 6 slots: 2
}

TEST(TenantFairCap, AFloodingTenantTakesOnlyIdleSlotsAndTheOthersStartAtOnce) {
  // Two busy tenants: alpha's share is half, and with tenant_fair_cap 1 it
  // holds 3 of the 6 slots within the limit while its demand is over 75% of
  // the class's (8 of 9 requests, then of 10 with beta's second). Nobody
  // else waits, so it takes the 2 slots left as well, outside the limit.
  SimProcess sim({"--profile", "tiny", "--model", "m1", "--added-latency-ms", "3000"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 6;
  config.extra = "scheduler: {tenant_fair_cap: 1}\n";
  GatewayProcess gateway(config.to_yaml());
  const auto call = [&](const char* key) { return chat_async(gateway.port(), key, 5); };
  auto beta_first = call(kBetaKey);
  wait_for_gauge(gateway.admin_port(), "arbiter_backend_in_flight", 1);
  std::vector<std::future<HttpResponse>> alpha;
  for (int i = 0; i < 8; ++i) alpha.push_back(call(kAlphaKey));
  wait_for_gauge(gateway.admin_port(), "arbiter_queue_depth", 3);
  wait_for_gauge(gateway.admin_port(), "arbiter_backend_in_flight", 6);
  const auto over_fair_share = [&] {
    return metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_scheduler_events_total",
                        {{"event", "over_fair_share"}})
        .value_or(0);
  };
  EXPECT_EQ(over_fair_share(), 2);
  // beta's next request starts at once beside them: alpha's two over its
  // share hold no slot of the limit. The engine runs 7.
  auto beta_second = call(kBetaKey);
  wait_for_gauge(gateway.admin_port(), "arbiter_backend_in_flight", 7);
  EXPECT_EQ(gauge(gateway.admin_port(), "arbiter_queue_depth"), 3);
  expect_started_at_once(beta_first, beta_second);
  if (HasFatalFailure()) return;
  // alpha's three waited for its cap (nothing was free outside the others'
  // slots); once beta has no work it is alone and uncapped, so everything
  // is served.
  expect_waited_for(alpha, "tenant_cap", 3);
}

}  // namespace
}  // namespace arbiter::test
