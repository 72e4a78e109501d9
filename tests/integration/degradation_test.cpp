// Staged degradation live (issue 43): the gateway computes its pool's load
// coefficient from arbiter-sim's /metrics and its own queue, and as the
// load passes each stage's threshold, what it serves changes: a degradable
// class's max_tokens is capped and background work is paused (elevated),
// the model's degraded variant answers (high), sheddable classes are
// refused 429 `overloaded` (shedding); the protected class passes untouched
// throughout; below the thresholds again, after the hold, nothing is
// changed; switched off (it is on by default), the stage is computed and
// nothing is changed; a reload that leaves the pool alone keeps its stage.
// The thresholds are set for a pool of two slots so each stage is
// reached by a known number of long streams; every wait polls a gauge.
#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output

namespace arbiter::test {
namespace {

const Labels kPool{{"pool", "m1"}};

// L = 0.5 busy + 0.5 queue (the engine's KV and cache terms weigh nothing
// here, so the stage follows the requests the test holds open): two
// streams on the two slots are L 0.5, two more queued are L 1.
GatewayConfig degradation_config(uint16_t port, const std::string& thresholds, const std::string& more = "") {
  GatewayConfig config;
  config.backend_ports = {port};
  config.max_concurrency = 2;
  config.engine_signals = true;
  config.alpha_classes = "[critical, chat, batch]";
  config.extra = "degradation: {enabled: true, weight_busy: 0.5, weight_kv: 0, weight_queue: 0.5, "
                 "weight_cache_miss: 0, smoothing_ms: 0, hold_ms: 300, exit_margin: 0.05, max_shed: 1, "
                 "cap_max_tokens: 3, " + thresholds + "}\n"
                 // The built-in classes, waiting as long as the test's streams take.
                 "classes:\n"
                 "  - {name: critical, max_queue_wait_ms: 600000}\n"
                 "  - {name: chat, max_queue_wait_ms: 600000}\n"
                 "  - {name: batch}\n" + more;
  return config;
}

std::future<HttpResponse> send(uint16_t port, const std::string& cls, int tokens, const std::string& model = "m1",
                               bool stream = false) {
  const std::string extra = "\"max_tokens\":" + std::to_string(tokens) + ",\"min_tokens\":" +
                            std::to_string(tokens) + (stream ? ",\"stream\":true" : "");
  return std::async(std::launch::async, [=] {
    return http_call(port, gateway_post("/v1/chat/completions", sim_chat(extra, "Write a report.", model), kAlphaKey,
                                        cls),
                     Millis(120'000));
  });
}

// The first value of the sample at or above `least` (or the last seen).
double at_least(GatewayProcess& gateway, const std::string& name, double least, const Labels& labels) {
  return gateway.wait_for_metric(name, [&](double v) { return v >= least; }, Millis(10'000), labels).value_or(-1);
}

double stage(GatewayProcess& gateway, double want) {
  return gateway.wait_for_metric("arbiter_degradation_stage", [&](double v) { return v == want; }, Millis(30'000),
                                 kPool)
      .value_or(-1);
}

TEST(Degradation, ElevatedCapsDegradableClassesPausesBackgroundAndSparesTheProtectedOne) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(degradation_config(sim.port(), "elevated_at: 0.45, high_at: 0.99, shed_at: 1").to_yaml());
  ASSERT_EQ(stage(gateway, 0), 0) << describe_output(gateway);
  // Normal since the start: a Unix time, not 0.
  EXPECT_GT(at_least(gateway, "arbiter_degradation_stage_since_seconds", 1.6e9, kPool), 1.6e9);

  // Two long streams hold both slots: busy 1, L 0.5.
  std::vector<std::future<HttpResponse>> load;
  for (int i = 0; i < 2; ++i) load.push_back(send(gateway.port(), "chat", 300, "m1", true));
  ASSERT_EQ(stage(gateway, 1), 1) << describe_output(gateway);

  // Queued behind them while the pool is elevated: chat capped to 3 tokens
  // and told so; batch paused; critical untouched.
  auto chat = send(gateway.port(), "chat", 50);
  auto batch = send(gateway.port(), "batch", 5);
  auto critical = send(gateway.port(), "critical", 8);
  for (auto& f : load) EXPECT_EQ(f.get().status, 200);

  const HttpResponse capped = chat.get();
  ASSERT_EQ(capped.status, 200) << capped.body;
  EXPECT_EQ(capped.header("x-arbiter-degraded").value_or(""), "elevated/cap");
  EXPECT_EQ(capped.header("x-arbiter-max-tokens-capped").value_or(""), "3");
  EXPECT_EQ(capped.json().at("usage").at("completion_tokens").as_int64(), 3);

  const HttpResponse spared = critical.get();
  ASSERT_EQ(spared.status, 200) << spared.body;
  EXPECT_FALSE(spared.header("x-arbiter-degraded")) << "the protected class was degraded";
  EXPECT_EQ(spared.json().at("usage").at("completion_tokens").as_int64(), 8);

  // Batch ran only once the stage was left (hold 300 ms): it waited paused,
  // and its own answer is whole (background work is paused, not capped).
  const HttpResponse resumed = batch.get();
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  EXPECT_EQ(resumed.header("x-arbiter-wait-reason").value_or(""), "paused");
  EXPECT_FALSE(resumed.header("x-arbiter-degraded"));
  EXPECT_EQ(stage(gateway, 0), 0);

  // Normal again: nothing is changed.
  const HttpResponse after = send(gateway.port(), "chat", 20).get();
  EXPECT_EQ(after.status, 200);
  EXPECT_FALSE(after.header("x-arbiter-degraded"));
  EXPECT_EQ(after.json().at("usage").at("completion_tokens").as_int64(), 20);
  EXPECT_GE(at_least(gateway, "arbiter_degraded_requests_total", 1, {{"pool", "m1"}, {"class", "chat"}, {"action", "cap"}}),
            1);
  EXPECT_GE(at_least(gateway, "arbiter_degradation_transitions_total", 1, {{"pool", "m1"}, {"to", "elevated"}}), 1);
}

TEST(Degradation, HighSendsDegradableClassesToTheModelsVariant) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  SimProcess variant({"--profile", "llama-8b-a100", "--model", "m1-awq"});
  GatewayConfig config = degradation_config(sim.port(), "elevated_at: 0.3, high_at: 0.45, shed_at: 1");
  config.models_extra = "    degraded: m1-awq\n"
                        "  - name: m1-awq\n"
                        "    backends: [{url: \"http://127.0.0.1:" + std::to_string(variant.port()) + "\"}]\n";
  GatewayProcess gateway(config.to_yaml());
  std::vector<std::future<HttpResponse>> load;
  for (int i = 0; i < 2; ++i) load.push_back(send(gateway.port(), "chat", 300, "m1", true));
  ASSERT_EQ(stage(gateway, 2), 2) << describe_output(gateway);

  const HttpResponse rerouted = send(gateway.port(), "chat", 5).get();
  ASSERT_EQ(rerouted.status, 200) << rerouted.body;
  EXPECT_EQ(rerouted.header("x-arbiter-model").value_or(""), "m1-awq");
  EXPECT_EQ(rerouted.header("x-arbiter-degraded").value_or(""), "high/cap, high/variant");
  EXPECT_EQ(rerouted.json().at("model").as_string(), "m1-awq");  // the engine that answered says so
  EXPECT_EQ(variant.metric("vllm:request_success_total").value_or(0), 1);

  const HttpResponse critical = send(gateway.port(), "critical", 5).get();
  ASSERT_EQ(critical.status, 200);
  EXPECT_FALSE(critical.header("x-arbiter-model"));
  for (auto& f : load) EXPECT_EQ(f.get().status, 200);
}

TEST(Degradation, SheddingRefusesSheddableClassesButNeverTheProtectedOne) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(degradation_config(sim.port(), "elevated_at: 0.3, high_at: 0.4, shed_at: 0.6").to_yaml());
  // Two streams running and two queued: busy 1, queue 1, L 1, shedding
  // with probability max_shed (1) for every sheddable class.
  std::vector<std::future<HttpResponse>> load;
  for (int i = 0; i < 2; ++i) load.push_back(send(gateway.port(), "chat", 300, "m1", true));
  ASSERT_EQ(stage(gateway, 2), 2) << describe_output(gateway);
  for (int i = 0; i < 2; ++i) load.push_back(send(gateway.port(), "critical", 300, "m1", true));
  ASSERT_EQ(stage(gateway, 3), 3) << describe_output(gateway);

  const HttpResponse shed = send(gateway.port(), "chat", 5).get();
  EXPECT_EQ(shed.status, 429) << shed.body << " " << shed.header("x-arbiter-degraded").value_or("-") << " "
                              << describe_output(gateway);
  EXPECT_EQ(shed.json().at("error").at("code").as_string(), "overloaded");
  EXPECT_GE(std::stoi(shed.header("retry-after").value_or("0")), 1);
  EXPECT_EQ(shed.header("x-arbiter-degraded").value_or(""), "shedding/shed");
  // The access log says it too.
  const auto logged = gateway.wait_for_log(
      [](const boost::json::object& o) { return o.contains("degraded") && o.at("degraded") == "shedding/shed"; },
      Millis(10'000));
  ASSERT_TRUE(logged) << describe_output(gateway);
  EXPECT_EQ(logged->at("status"), 429);
  EXPECT_EQ(logged->at("class"), "chat");
  EXPECT_EQ(send(gateway.port(), "batch", 5).get().status, 429);

  // The protected class queues and is served, whatever the load.
  auto critical = send(gateway.port(), "critical", 5);
  for (auto& f : load) EXPECT_EQ(f.get().status, 200);
  EXPECT_EQ(critical.get().status, 200);
  EXPECT_EQ(at_least(gateway, "arbiter_degraded_requests_total", 1, {{"pool", "m1"}, {"class", "chat"}, {"action", "shed"}}),
            1);
}

TEST(Degradation, SwitchedOffTheStageIsComputedButNothingIsChanged) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayConfig config = degradation_config(sim.port(), "elevated_at: 0.45, high_at: 0.99, shed_at: 1");
  config.extra.replace(config.extra.find("enabled: true"), 13, "enabled: false");
  GatewayProcess gateway(config.to_yaml());
  std::vector<std::future<HttpResponse>> load;
  for (int i = 0; i < 2; ++i) load.push_back(send(gateway.port(), "chat", 300, "m1", true));
  ASSERT_EQ(stage(gateway, 1), 1) << describe_output(gateway);
  EXPECT_GE(at_least(gateway, "arbiter_pool_load", 0.45, kPool), 0.45);
  const HttpResponse whole = send(gateway.port(), "chat", 20).get();
  EXPECT_EQ(whole.status, 200);
  EXPECT_FALSE(whole.header("x-arbiter-degraded"));
  EXPECT_EQ(whole.json().at("usage").at("completion_tokens").as_int64(), 20);
  for (auto& f : load) EXPECT_EQ(f.get().status, 200);
}

TEST(Degradation, AReloadThatLeavesThePoolAloneKeepsItsStageAndWhatItPauses) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  // The admin listener as GatewayProcess sets it, so the reload keeps it.
  GatewayConfig config =
      degradation_config(sim.port(), "elevated_at: 0.45, high_at: 0.99, shed_at: 1", "admin: {port: 0}\n");
  GatewayProcess gateway(config.to_yaml());
  // The streams are the protected class, so none is capped however early
  // the stage is entered (one stream and the engine's own queue for a step
  // is L 0.5 too).
  std::vector<std::future<HttpResponse>> load;
  for (int i = 0; i < 2; ++i) load.push_back(send(gateway.port(), "critical", 400, "m1", true));
  ASSERT_EQ(stage(gateway, 1), 1) << describe_output(gateway);
  // Both streams running: L stays at 0.5 until they end. Before that (a
  // loaded machine starting the second one late) the stage may have been
  // left and entered again: what counts is what the reload does.
  ASSERT_EQ(gateway.wait_for_metric("arbiter_backend_in_flight", [](double v) { return v >= 2; }, Millis(30'000)), 2)
      << describe_output(gateway);
  ASSERT_EQ(stage(gateway, 1), 1) << describe_output(gateway);
  const double entered = at_least(gateway, "arbiter_degradation_transitions_total", 1, {{"pool", "m1"}, {"to", "elevated"}});
  const double since = at_least(gateway, "arbiter_degradation_stage_since_seconds", 1.6e9, kPool);
  // A change elsewhere, applied a few times while the engine monitor goes on
  // judging: alpha gets a quota far above what the test uses. (A new
  // generation's monitor once judged before the old stage was carried over,
  // and the stage was entered again: a race each reload gives a chance.)
  for (int i = 0; i < 5; ++i) {
    config.alpha_extra = ", quotas: [{requests_per_minute: " + std::to_string(10000 + i) + "}]";
    const HttpResponse applied = http_post(gateway.admin_port(), "/admin/config", config.to_yaml());
    ASSERT_EQ(applied.status, 200) << applied.body;
  }
  // Background work sent now is paused by the carried stage, not let
  // through until the new generation's first judgement.
  auto batch = send(gateway.port(), "batch", 5);
  EXPECT_EQ(at_least(gateway, "arbiter_degradation_stage_since_seconds", 1.6e9, kPool), since);
  for (auto& f : load) EXPECT_EQ(f.get().status, 200);
  const HttpResponse resumed = batch.get();
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  EXPECT_EQ(resumed.header("x-arbiter-wait-reason").value_or(""), "paused");
  ASSERT_EQ(stage(gateway, 0), 0);
  // Not entered again: a stage restarted at the reload would have stepped up again.
  EXPECT_EQ(at_least(gateway, "arbiter_degradation_transitions_total", 1, {{"pool", "m1"}, {"to", "elevated"}}),
            entered)
      << describe_output(gateway);
}

}  // namespace
}  // namespace arbiter::test
