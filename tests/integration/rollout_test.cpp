// Model aliases live (issue 45) against real arbiter-sim engines: the
// traffic splits by weight and a session stays on its side; a canary made
// slow with the simulator's fault injection is rolled back automatically
// within its window, with the figures in the event; a healthy canary is
// promoted through its steps.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <sstream>
#include <thread>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/metrics_text.hpp"

namespace arbiter::test {
namespace {

namespace json = boost::json;

// m1 on `stable`, m1-new on `canary`, and the alias `chat` over both.
GatewayConfig alias_config(uint16_t stable, uint16_t canary, const std::string& alias) {
  GatewayConfig config;
  config.backend_ports = {stable};
  config.models_extra = "  - name: m1-new\n    backends:\n      - {url: \"http://127.0.0.1:" + std::to_string(canary) +
                        "\", max_concurrency: 8}\n";
  config.extra = "cache: {enabled: false}\naliases:\n" + alias;
  return config;
}

HttpResponse ask(const GatewayProcess& gateway, const std::string& session = {}, bool stream = true) {
  HttpRequest r = sim_post("/v1/chat/completions",
                           sim_chat(std::string("\"max_tokens\":6") + (stream ? ",\"stream\":true" : ""), "Say hello.", "chat"));
  r.headers.emplace_back("authorization", std::string("Bearer ") + kAlphaKey);
  if (!session.empty()) r.headers.emplace_back("x-session-id", session);
  return http_call(gateway.port(), r, Millis(30'000));
}

// The event log's lines named `event` (stderr: JSON lines).
std::vector<json::object> events(const GatewayProcess& gateway, std::string_view event) {
  std::vector<json::object> out;
  std::istringstream in(gateway.stderr_text());
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.front() != '{') continue;
    boost::system::error_code ec;
    auto v = json::parse(line, ec);
    if (!ec && v.is_object() && v.as_object().contains("event") && v.at("event").as_string() == event) {
      out.push_back(v.as_object());
    }
  }
  return out;
}

// Sends streamed requests from `clients` threads until `done()` or the
// deadline; returns how many were answered 200, and counts the others.
int drive(const GatewayProcess& gateway, int clients, const std::function<bool()>& done, Millis deadline,
          std::atomic<int>& failed) {
  std::atomic<int> ok{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const auto end = Clock::now() + deadline;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      while (!stop && Clock::now() < end) {
        const HttpResponse r = ask(gateway);
        (r.status == 200 ? ok : failed)++;
      }
    });
  }
  while (Clock::now() < end && !done()) std::this_thread::sleep_for(Millis(50));
  stop = true;
  for (auto& t : threads) t.join();
  return ok;
}

TEST(Rollout, TrafficSplitsByWeightAndASessionStaysOnItsSide) {
  SimProcess stable({"--model", "m1"});
  SimProcess canary({"--model", "m1-new"});
  GatewayProcess gateway(
      alias_config(stable.port(), canary.port(),
                   "  - {name: chat, targets: [{model: m1, weight: 50}, {model: m1-new, weight: 50}]}\n")
          .to_yaml());
  std::map<std::string, int> sides;
  for (int s = 0; s < 40; ++s) {
    const std::string session = "session-" + std::to_string(s);
    const HttpResponse first = ask(gateway, session, false);
    ASSERT_EQ(first.status, 200) << first.body << describe_output(gateway);
    const std::string side = first.header("x-arbiter-target").value_or("(none)");
    ++sides[side];
    for (int again = 0; again < 3; ++again) {
      EXPECT_EQ(ask(gateway, session, false).header("x-arbiter-target").value_or("(none)"), side) << session;
    }
  }
  // 40 sessions at 50/50: both sides well used (binomial: 9..31 holds with p > 0.999).
  ASSERT_EQ(sides.size(), 2u);
  EXPECT_GE(sides["m1"], 9);
  EXPECT_GE(sides["m1-new"], 9);
  EXPECT_GT(metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_alias_requests_total",
                         {{"alias", "chat"}, {"target", "m1-new"}})
                .value_or(0),
            0);
  // An unknown name is still a 404, an alias's target model still served by its own name.
  HttpRequest direct = sim_post("/v1/chat/completions", sim_chat("\"max_tokens\":4", "Hi.", "m1-new"));
  direct.headers.emplace_back("authorization", std::string("Bearer ") + kAlphaKey);
  EXPECT_EQ(http_call(gateway.port(), direct).status, 200);
}

TEST(Rollout, ASlowCanaryIsRolledBackWithinItsWindowWithTheFigures) {
  SimProcess stable({"--model", "m1"});
  SimProcess canary({"--model", "m1-new", "--added-latency-ms", "150"});
  GatewayProcess gateway(alias_config(stable.port(), canary.port(),
                                      "  - name: chat\n"
                                      "    targets: [{model: m1, weight: 50}, {model: m1-new, weight: 50}]\n"
                                      "    sticky: none\n"
                                      "    canary: {target: m1-new, margin: 0.1, window_s: 10, min_requests: 20}\n")
                             .to_yaml());
  std::atomic<int> failed{0};
  const int ok = drive(gateway, 4, [&] { return !events(gateway, "canary_rolled_back").empty(); }, Millis(60'000), failed);
  const auto rolled = events(gateway, "canary_rolled_back");
  ASSERT_EQ(rolled.size(), 1u) << ok << " answered\n" << describe_output(gateway);
  const json::object& e = rolled[0];
  EXPECT_EQ(e.at("alias").as_string(), "chat");
  EXPECT_EQ(e.at("canary").as_string(), "m1-new");
  EXPECT_EQ(e.at("reason").as_string(), "ttft_p99");
  EXPECT_GE(e.at("canary_requests").to_number<double>(), 20);
  EXPECT_GE(e.at("stable_requests").to_number<double>(), 20);
  EXPECT_GT(e.at("canary_p99_ttft_ms").to_number<double>(), 1.1 * e.at("stable_p99_ttft_ms").to_number<double>());
  EXPECT_EQ(failed.load(), 0);  // slow, not failing: every request was answered
  EXPECT_EQ(gateway.wait_for_metric("arbiter_alias_weight", [](double v) { return v == 0; }, Millis(5'000),
                                    {{"alias", "chat"}, {"target", "m1-new"}}),
            0);
  // From now on everything goes to the stable side.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(ask(gateway).header("x-arbiter-target").value_or("(none)"), "m1");
}

TEST(Rollout, AHealthyCanaryIsPromotedThroughItsSteps) {
  SimProcess stable({"--model", "m1"});
  SimProcess canary({"--model", "m1-new"});
  // A wide margin: two equal engines on a shared machine differ by noise,
  // and this drill is about the steps.
  GatewayProcess gateway(alias_config(stable.port(), canary.port(),
                                      "  - name: chat\n"
                                      "    targets: [{model: m1, weight: 1}, {model: m1-new, weight: 1}]\n"
                                      "    sticky: none\n"
                                      "    canary: {target: m1-new, margin: 3, window_s: 5, min_requests: 5,"
                                      " steps: [20, 60, 100], step_after_s: 1}\n")
                             .to_yaml());
  auto at_full = [&] {
    const auto promoted = events(gateway, "canary_promoted");
    return !promoted.empty() && promoted.back().at("canary_percent").to_number<double>() == 100;
  };
  std::atomic<int> failed{0};
  drive(gateway, 4, at_full, Millis(60'000), failed);
  std::vector<double> steps;
  for (const auto& e : events(gateway, "canary_promoted")) steps.push_back(e.at("canary_percent").to_number<double>());
  EXPECT_EQ(steps, (std::vector<double>{60, 100})) << describe_output(gateway);
  EXPECT_TRUE(events(gateway, "canary_rolled_back").empty());
  EXPECT_EQ(failed.load(), 0);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(ask(gateway).header("x-arbiter-target").value_or("(none)"), "m1-new");
}

// m1 on `primary` behind the alias `chat`, with m1-shadow on `shadow` mirrored.
GatewayConfig shadow_config(uint16_t primary, uint16_t shadow, const std::string& settings) {
  GatewayConfig config;
  config.backend_ports = {primary};
  config.models_extra = "  - name: m1-shadow\n    backends:\n      - {url: \"http://127.0.0.1:" +
                        std::to_string(shadow) + "\", max_concurrency: 8}\n";
  config.extra = "cache: {enabled: false}\naliases:\n  - {name: chat, targets: [{model: m1}], shadow: {model: m1-shadow" +
                 settings + "}}\n";
  return config;
}

HttpResponse ask_greedy(const GatewayProcess& gateway, bool stream) {
  HttpRequest r = sim_post("/v1/chat/completions",
                           sim_chat(std::string("\"max_tokens\":8,\"temperature\":0") + (stream ? ",\"stream\":true" : ""),
                                    "Name a river.", "chat"));
  r.headers.emplace_back("authorization", std::string("Bearer ") + kAlphaKey);
  return http_call(gateway.port(), r, Millis(30'000));
}

TEST(Shadow, EveryRequestIsMirroredAndComparedInMetricsAndTheReport) {
  SimProcess primary({"--model", "m1"});
  SimProcess shadow({"--model", "m1-shadow"});
  GatewayProcess gateway(shadow_config(primary.port(), shadow.port(), ", share: 1, max_concurrency: 64").to_yaml());
  for (int i = 0; i < 30; ++i) {
    const HttpResponse r = ask_greedy(gateway, i % 3 == 0);
    ASSERT_EQ(r.status, 200) << r.body << describe_output(gateway);
    EXPECT_EQ(r.header("x-arbiter-target").value_or("(none)"), "m1");  // the real answer is the target's
  }
  EXPECT_EQ(gateway.wait_for_metric("arbiter_shadow_pairs_total", [](double v) { return v >= 30; }, Millis(20'000),
                                    {{"alias", "chat"}, {"outcome", "both_ok"}}),
            30)
      << describe_output(gateway);
  EXPECT_EQ(shadow.metric("vllm:request_success_total").value_or(0), 30);
  const json::value report = http_get(gateway.admin_port(), "/admin/rollouts").json();
  const json::object& s = report.at("data").at(0).at("shadow").as_object();
  EXPECT_EQ(s.at("model").as_string(), "m1-shadow");
  EXPECT_EQ(s.at("pairs").to_number<double>(), 30);
  EXPECT_EQ(s.at("shadow_errors").to_number<double>(), 0);
  EXPECT_EQ(s.at("deterministic_pairs").to_number<double>(), 30);
  // The simulator seeds its text with the served model's name: another
  // model's answers differ, and the comparison says so.
  EXPECT_EQ(s.at("exact_matches").to_number<double>(), 0);
  EXPECT_EQ(s.at("exact_match_rate").to_number<double>(), 0);
  EXPECT_GT(s.at("shadow_p50_ms").to_number<double>(), 0);
  EXPECT_EQ(s.at("primary_mean_output_tokens").to_number<double>(), 8);
  EXPECT_EQ(s.at("shadow_mean_output_tokens").to_number<double>(), 8);
}

TEST(Shadow, AHungShadowNeitherDelaysNorFailsTheRealAnswers) {
  SimProcess primary({"--model", "m1"});
  SimProcess shadow({"--model", "m1-shadow", "--hang-rate", "1"});
  GatewayProcess gateway(shadow_config(primary.port(), shadow.port(), ", max_concurrency: 2, timeout_s: 1").to_yaml());
  for (int i = 0; i < 20; ++i) {
    const HttpResponse r = ask_greedy(gateway, i % 2 == 0);
    EXPECT_EQ(r.status, 200) << r.body;
  }
  // Two at a time hang until their timeout; the rest were skipped, counted.
  const std::string text = http_get(gateway.admin_port(), "/metrics").body;
  const double sent = metric_value(text, "arbiter_shadow_requests_total", {{"result", "sent"}}).value_or(0);
  const double skipped = metric_value(text, "arbiter_shadow_requests_total", {{"result", "skipped_busy"}}).value_or(0);
  EXPECT_EQ(sent + skipped, 20);
  EXPECT_GT(skipped, 0);
  EXPECT_EQ(gateway.wait_for_metric("arbiter_shadow_pairs_total", [&](double v) { return v >= sent; }, Millis(20'000),
                                    {{"outcome", "shadow_error"}}),
            sent);
}

}  // namespace
}  // namespace arbiter::test
