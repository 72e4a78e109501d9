// Adaptive capacity live (issue 11): the gateway learns each backend's slot
// limit from its engine (arbiter-sim's /metrics and the gaps between its
// stream events). With background work queued and an engine that has room,
// the limit grows above max_concurrency and the engine runs more than
// max_concurrency of that work at once, while another class still never
// gets more than max_concurrency, and a class's per-token target takes the
// extra slots back while it has work; a model may have its own settings;
// once the engine's KV cache fills, the limit shrinks back below the start,
// and clients leaving running streams give growth back;
// an engine the gateway cannot see starts over at max_concurrency. Every wait is bounded and polls the
// gateway's or the sim's gauges; nothing is timed.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <atomic>
#include <thread>
#include <vector>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/metrics_text.hpp"
#include "support/raw_socket.hpp"

namespace arbiter::test {
namespace {

constexpr unsigned kSlots = 4;  // max_concurrency: the controller's start
const Labels kBackend{{"model", "m1"}};

// `chat_keys`: more of chat's class keys (e.g. ", tpot_slo_ms: 1");
// `enabled`: the global section's switch; `budget_patience`: 1000 keeps the
// budget (every class's slots) at the start, for the tests of background
// work's extra slots; `max`: the ceiling.
GatewayConfig adaptive_config(uint16_t port, const std::string& chat_keys = "", bool enabled = true,
                              int budget_patience = 1000, int max = 64) {
  GatewayConfig config;
  config.backend_ports = {port};
  config.max_concurrency = kSlots;
  config.engine_signals = true;
  config.alpha_classes = "[batch, chat]";
  config.extra =
      "classes:\n"
      "  - {name: batch, background: true, preemptible: true, max_queue_wait_ms: 600000}\n"
      "  - {name: chat, max_queue_wait_ms: 600000" + chat_keys + "}\n"
      // A decision per 100 ms; a gap target a loaded test machine meets
      // (the sim's steps take ~12 ms); extra slots up to the start again.
      "adaptive_capacity: {enabled: " + std::string(enabled ? "true" : "false") +
      ", min: 1, max: " + std::to_string(max) + ", max_extra_share: 1, interval_ms: 100,\n"
      "                    min_gaps: 8, itl_target_ms: 200, budget_patience: " + std::to_string(budget_patience) +
      "}\n";
  return config;
}

std::vector<std::future<HttpResponse>> send_streams(uint16_t port, const std::string& cls, int count, int tokens,
                                                   const std::string& model = "m1") {
  std::vector<std::future<HttpResponse>> out;
  const std::string extra = "\"max_tokens\":" + std::to_string(tokens) + ",\"min_tokens\":" +
                            std::to_string(tokens) + ",\"stream\":true";
  for (int i = 0; i < count; ++i) {
    out.push_back(std::async(std::launch::async, [port, cls, extra, model] {
      return http_call(port, gateway_post("/v1/chat/completions", sim_chat(extra, "Write a report.", model),
                                          kAlphaKey, cls),
                       Millis(120'000));
    }));
  }
  return out;
}

// The most requests `sim` ran at once until every answer is in.
double most_running_until_done(SimProcess& sim, std::vector<std::future<HttpResponse>>& answers) {
  double most = 0;
  while (!std::all_of(answers.begin(), answers.end(), [](const auto& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  })) {
    most = std::max(most, sim.metric("vllm:num_requests_running").value_or(0));
    std::this_thread::sleep_for(Millis(20));
  }
  return most;
}

void expect_all_ok(std::vector<std::future<HttpResponse>>& answers) {
  for (auto& f : answers) {
    const HttpResponse r = f.get();
    EXPECT_EQ(r.status, 200) << r.body;
  }
}

TEST(AdaptiveCapacity, BackgroundWorkGetsExtraSlotsOtherClassesKeepTheLimit) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(adaptive_config(sim.port()).to_yaml());
  EXPECT_EQ(gateway.wait_for_metric("arbiter_backend_slot_limit", [](double v) { return v == kSlots; },
                                    Millis(10'000), kBackend),
            kSlots);

  // A background backlog four times the start, long enough to grow into.
  auto batch = send_streams(gateway.port(), "batch", 4 * kSlots, 400);
  const auto extra = gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v > 0; },
                                             Millis(60'000), kBackend);
  ASSERT_TRUE(extra && *extra > 0) << describe_output(gateway);
  const auto running = sim.wait_for_metric("vllm:num_requests_running", [](double v) { return v > kSlots; },
                                           Millis(60'000));
  EXPECT_GT(running.value_or(0), kSlots) << "the engine never ran more than max_concurrency background requests";
  EXPECT_GT(gateway.wait_for_metric("arbiter_backend_slot_limit_changes_total", [](double v) { return v > 0; },
                                    Millis(10'000), {{"model", "m1"}, {"direction", "up"}})
                .value_or(0),
            0);
  expect_all_ok(batch);

  // The extra slots are still there (nothing shrinks a limit nobody is
  // slowed by), but chat is not background: it never runs above the start.
  const double extra_before = gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v > 0; },
                                                      Millis(10'000), kBackend)
                                  .value_or(0);
  ASSERT_GT(extra_before, 0);
  auto chat = send_streams(gateway.port(), "chat", 3 * kSlots, 100);
  const double most_running = most_running_until_done(sim, chat);
  expect_all_ok(chat);
  EXPECT_LE(most_running, kSlots) << "chat ran on the background work's extra slots";
  EXPECT_GT(most_running, 0);
  EXPECT_GT(gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v > 0; }, Millis(10'000),
                                    kBackend)
                .value_or(0),
            0);
}

// Issue 45: a reload that leaves the model and adaptive_capacity alone
// keeps what the controllers learned (a restart of them would put the
// backend back at max_concurrency with no extra slots).
TEST(AdaptiveCapacity, AReloadThatLeavesTheModelAloneKeepsTheLearnedLimits) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayConfig config = adaptive_config(sim.port());
  config.extra += "admin: {port: 0}\n";  // as GatewayProcess sets it, so the reload keeps it
  GatewayProcess gateway(config.to_yaml());
  auto batch = send_streams(gateway.port(), "batch", 4 * kSlots, 400);
  const auto extra = gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v > 0; },
                                             Millis(60'000), kBackend);
  ASSERT_TRUE(extra && *extra > 0) << describe_output(gateway);
  expect_all_ok(batch);
  // A change elsewhere: alpha gets a quota far above what the test uses.
  config.alpha_extra = ", quotas: [{requests_per_minute: 10000}]";
  const HttpResponse applied = http_post(gateway.admin_port(), "/admin/config", config.to_yaml());
  ASSERT_EQ(applied.status, 200) << applied.body;
  const auto after = gateway.wait_for_metric("arbiter_backend_extra_slots", [](double) { return true; },
                                             Millis(10'000), kBackend);
  EXPECT_GT(after.value_or(0), 0) << "the reload put the backend back at its start";
}

// Issue 41: the slots follow the engine for every class. A chat backlog
// four times max_concurrency, on an engine with room (no ttft_slo, gaps
// within the 200 ms target): the backend's limit grows past its start and
// the engine runs more chat requests than max_concurrency at once.
TEST(AdaptiveCapacity, EveryClassGetsTheSlotsTheEngineHasRoomFor) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(adaptive_config(sim.port(), "", true, 2).to_yaml());
  EXPECT_EQ(gateway.wait_for_metric("arbiter_backend_slot_limit", [](double v) { return v == kSlots; },
                                    Millis(10'000), kBackend),
            kSlots);
  auto chat = send_streams(gateway.port(), "chat", 4 * kSlots, 400);
  EXPECT_GT(gateway.wait_for_metric("arbiter_backend_slot_limit", [](double v) { return v > kSlots; },
                                    Millis(60'000), kBackend)
                .value_or(0),
            kSlots)
      << describe_output(gateway);
  EXPECT_GT(most_running_until_done(sim, chat), kSlots) << "chat never ran above max_concurrency";
  expect_all_ok(chat);
  EXPECT_EQ(gateway.wait_for_metric("arbiter_backend_extra_slots", [](double) { return true; }, Millis(1'000),
                                    kBackend)
                .value_or(-1),
            0);  // no background work: no extra slots
}

// Clients leaving chat streams mid-answer give growth back (issue 41: a
// per-token SLO can allow answers longer than clients wait, and more
// sequences make every answer longer). Two clients' streams start first,
// then more than the ceiling (12) of others: the budget grows to the
// ceiling and stays there, full, with work waiting. The two clients hang
// up; the others take their slots at once, and the limit comes down
// although nothing else changed (without the rule it holds: at the
// ceiling, the engine with room, its steps fast).
TEST(AdaptiveCapacity, ClientsLeavingRunningStreamsGiveTheGrowthBack) {
  constexpr unsigned kCeiling = 3 * kSlots;
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(
      adaptive_config(sim.port(), ", ttft_slo_ms: 60000, max_share: 1", true, 2, kCeiling).to_yaml());
  // Two clients whose streams start first; they hang up when the test says
  // so, once the limit is at the ceiling (a timeout of their own raced the
  // climb there on a slow machine: they could leave before it, and the
  // limit's fall be counted before the test looked).
  // Each reads its stream as it comes (so its answer is not held up by a
  // full socket) until told to hang up; true when it was still open then.
  const std::string body = sim_chat(R"("max_tokens":4000,"min_tokens":4000,"stream":true)", "Write a report.", "m1");
  std::atomic<bool> hang_up{false};
  std::vector<std::future<bool>> leaving;
  for (int i = 0; i < 2; ++i) {
    leaving.push_back(std::async(std::launch::async, [&] {
      RawSocket client(gateway.port());
      client.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                  std::string(kAlphaKey) + "\r\nx-arbiter-class: chat\r\nContent-Type: application/json\r\n" +
                  "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
      while (!hang_up.load() && !client.closed()) client.read_until({}, Millis(50));
      return !client.closed();  // the socket closes as it goes out of scope
    }));
  }
  ASSERT_EQ(gateway.wait_for_metric("arbiter_backend_in_flight", [](double v) { return v == 2; }, Millis(5'000),
                                    kBackend),
            2)
      << describe_output(gateway);
  auto staying = send_streams(gateway.port(), "chat", 4 * kSlots, 1200);  // ~15 s each
  // At the ceiling and full before the two leave.
  ASSERT_EQ(gateway.wait_for_metric("arbiter_backend_slot_limit", [](double v) { return v == kCeiling; },
                                    Millis(30'000), kBackend),
            kCeiling)
      << describe_output(gateway);
  ASSERT_EQ(gateway.wait_for_metric("arbiter_backend_in_flight", [](double v) { return v == kCeiling; },
                                    Millis(1'000), kBackend),
            kCeiling)
      << describe_output(gateway);
  const double downs_before =
      metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_backend_slot_limit_changes_total",
                   {{"model", "m1"}, {"direction", "down"}})
          .value_or(0);
  hang_up = true;  // the two clients leave
  for (auto& f : leaving) EXPECT_TRUE(f.get()) << "the stream ended before its client left";
  EXPECT_GT(gateway.wait_for_metric("arbiter_backend_slot_limit_changes_total",
                                    [&](double v) { return v > downs_before; }, Millis(30'000),
                                    {{"model", "m1"}, {"direction", "down"}})
                .value_or(0),
            downs_before)
      << describe_output(gateway);
  expect_all_ok(staying);
}

// A class's tpot_slo_ms is the gap target while it has work on the pool:
// chat at 1 ms (no engine step is that short) makes every gap slow, and the
// background work's extra slots are given back while chat waits or runs.
// With chat's target left out (the test above) they stay.
TEST(AdaptiveCapacity, AClassPerTokenTargetTakesTheExtraSlotsBackWhileItHasWork) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(adaptive_config(sim.port(), ", tpot_slo_ms: 1").to_yaml());
  auto batch = send_streams(gateway.port(), "batch", 4 * kSlots, 800);
  ASSERT_GT(gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v > 0; }, Millis(60'000),
                                    kBackend)
                .value_or(0),
            0)
      << describe_output(gateway);
  // Only background work so far: itl_target_ms applies.
  EXPECT_EQ(gateway.wait_for_metric("arbiter_backend_gap_target_seconds", [](double v) { return v == 0.2; },
                                    Millis(10'000), kBackend),
            0.2);

  auto chat = send_streams(gateway.port(), "chat", kSlots, 300);
  EXPECT_EQ(gateway.wait_for_metric("arbiter_backend_gap_target_seconds", [](double v) { return v == 0.001; },
                                    Millis(30'000), kBackend),
            0.001);
  EXPECT_EQ(gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v == 0; }, Millis(60'000),
                                    kBackend),
            0)
      << "chat's 1 ms target did not take the extra slots back";
  expect_all_ok(chat);
  expect_all_ok(batch);
}

// A model's own adaptive_capacity: the global section off but for m1,
// whose section names only `enabled` and takes the rest from the global
// one. m1's backend grows; m2's engine never runs more than its
// max_concurrency of the same background backlog, and has no controller.
TEST(AdaptiveCapacity, AModelsOwnSectionTurnsItOnForThatModelOnly) {
  SimProcess sim1({"--profile", "llama-8b-a100", "--model", "m1"});
  SimProcess sim2({"--profile", "llama-8b-a100", "--model", "m2"});
  GatewayConfig config = adaptive_config(sim1.port(), "", false);
  config.models_extra = "    adaptive_capacity: {enabled: true}\n"
                        "  - name: m2\n"
                        "    backends: [{url: \"http://127.0.0.1:" + std::to_string(sim2.port()) +
                        "\", max_concurrency: " + std::to_string(kSlots) + "}]\n";
  GatewayProcess gateway(config.to_yaml());
  auto batch1 = send_streams(gateway.port(), "batch", 4 * kSlots, 400);
  auto batch2 = send_streams(gateway.port(), "batch", 4 * kSlots, 400, "m2");
  EXPECT_GT(gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v > 0; }, Millis(60'000),
                                    kBackend)
                .value_or(0),
            0)
      << describe_output(gateway);
  EXPECT_GT(sim1.wait_for_metric("vllm:num_requests_running", [](double v) { return v > kSlots; }, Millis(60'000))
                .value_or(0),
            kSlots);
  EXPECT_LE(most_running_until_done(sim2, batch2), kSlots) << "m2 ran above its max_concurrency";
  expect_all_ok(batch1);
  expect_all_ok(batch2);
  EXPECT_FALSE(gateway.wait_for_metric("arbiter_backend_slot_limit", [](double) { return true; }, Millis(1'000),
                                       {{"model", "m2"}})
                   .has_value());
}

TEST(AdaptiveCapacity, ShrinksBelowTheStartWhenTheEngineKvFills) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(adaptive_config(sim.port()).to_yaml());
  auto batch = send_streams(gateway.port(), "batch", 4 * kSlots, 600);
  const auto extra = gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v > 0; },
                                             Millis(60'000), kBackend);
  ASSERT_TRUE(extra && *extra > 0) << describe_output(gateway);

  // The engine's KV cache shrinks under the running sequences: its KV use
  // goes above kv_shrink_above, and the limit follows it down, past the
  // start (the engine would preempt by recompute otherwise).
  ASSERT_EQ(sim.set_faults(R"({"kv_blocks": 48})"), 200);
  EXPECT_EQ(gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v == 0; },
                                    Millis(60'000), kBackend),
            0);
  EXPECT_LT(gateway.wait_for_metric("arbiter_backend_slot_limit", [](double v) { return v < kSlots; },
                                    Millis(60'000), kBackend)
                .value_or(kSlots),
            kSlots);
  EXPECT_GT(gateway.wait_for_metric("arbiter_backend_slot_limit_changes_total", [](double v) { return v > 0; },
                                    Millis(10'000), {{"model", "m1"}, {"direction", "down"}})
                .value_or(0),
            0);
  ASSERT_EQ(sim.set_faults(R"({"kv_blocks": 0})"), 200);
  expect_all_ok(batch);
}

// An engine the gateway cannot see (its scrapes hang: stale, then down)
// gets no slots beyond what the operator configured: the controller starts
// over at max_concurrency, and grows again once the engine is back.
TEST(AdaptiveCapacity, AnEngineThatCannotBeSeenStartsOverAtMaxConcurrency) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayConfig config = adaptive_config(sim.port());
  config.stream_idle_ms = 120'000;  // the streams wait out the stopped engine
  // The stall fails the queued requests (503, no live backend) while the
  // running ones have answered: half of them, so the model breaker isolates
  // the model and, once the engine is back, admits only its trials at first.
  // That is the breaker's business (resilience_test.cpp), not this test's.
  config.extra += "model_breaker: {enabled: false}\n";
  GatewayProcess gateway(config.to_yaml());
  auto batch = send_streams(gateway.port(), "batch", 4 * kSlots, 600);
  const auto grown = [&] {
    return gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v > 0; }, Millis(60'000),
                                   kBackend);
  };
  ASSERT_GT(grown().value_or(0), 0) << describe_output(gateway);

  sim.child().signal(SIGSTOP);
  const auto extra = gateway.wait_for_metric("arbiter_backend_extra_slots", [](double v) { return v == 0; },
                                             Millis(60'000), kBackend);
  const auto limit = gateway.wait_for_metric("arbiter_backend_slot_limit", [](double v) { return v == kSlots; },
                                             Millis(10'000), kBackend);
  sim.child().signal(SIGCONT);
  EXPECT_EQ(extra, 0);
  EXPECT_EQ(limit, kSlots);
  // A pool whose backends are all down answers its queue 503 (its
  // backlog is gone): once the engine is seen again, a new one grows it again.
  for (auto& f : batch) f.get();
  ASSERT_EQ(gateway.wait_for_metric("arbiter_backend_down", [](double v) { return v == 0; }, Millis(30'000),
                                    kBackend),
            0);
  auto again = send_streams(gateway.port(), "batch", 4 * kSlots, 400);
  EXPECT_GT(grown().value_or(0), 0);
  expect_all_ok(again);
}

}  // namespace
}  // namespace arbiter::test
