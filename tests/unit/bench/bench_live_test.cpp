// Live mode's pure parts: prompt text that shares bytes where virtual mode
// shares cache blocks, the HTTP request each spec becomes, and the gateway
// config written for a scenario (read back by the gateway's own loader).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "bench/gateway_config_writer.hpp"
#include "bench/live_client.hpp"
#include "bench/live_request.hpp"
#include "bench/prompt_text.hpp"
#include "bench/request_log.hpp"
#include "bench/scenario_yaml.hpp"
#include "core/tenants.hpp"
#include "gateway/config_yaml.hpp"

namespace arbiter::bench {
namespace {

namespace json = boost::json;

Scenario smoke() {
  auto s = load_scenario(ARBITER_SOURCE_DIR "/bench/scenarios/smoke.yaml");
  EXPECT_TRUE(s) << s.error();
  return *s;
}

RequestSpec spec_with(uint64_t id, uint64_t prefix_key, uint32_t prefix, uint64_t history_key,
                      uint32_t history, uint32_t unique) {
  RequestSpec s;
  s.id = id;
  s.prefix = {prefix_key, prefix};
  s.history = {history_key, history};
  s.unique_tokens = unique;
  return s;
}

TEST(BenchPromptText, FourBytesPerTokenAndSharedSegmentsByteIdentical) {
  const RequestSpec a = spec_with(1, 7, 100, 0, 0, 30);
  const RequestSpec b = spec_with(2, 7, 100, 0, 0, 50);
  EXPECT_EQ(prefix_text(a, 0).size(), 400u);
  EXPECT_EQ(body_text(a, 0).size(), 120u);
  EXPECT_EQ(prefix_text(a, 0), prefix_text(b, 0));
  EXPECT_NE(body_text(a, 0), body_text(b, 0).substr(0, 120));  // own tokens differ
  EXPECT_NE(prefix_text(a, 0), prefix_text(spec_with(3, 8, 100, 0, 0, 30), 0));
  EXPECT_EQ(prefix_text(a, 0).find_first_not_of("abcdefghijklmnopqrstuvwxyz "), std::string::npos);
  EXPECT_NE(prefix_text(a, 0), prefix_text(a, 1));  // another run's salt: nothing cached
}

TEST(BenchPromptText, ALongerHistoryExtendsTheShorterOne) {
  // Turn k's history is a prefix of turn k+1's, as the engine's cache expects.
  const std::string turn1 = body_text(spec_with(1, 0, 0, 9, 200, 0), 0);
  const std::string turn2 = body_text(spec_with(2, 0, 0, 9, 500, 0), 0);
  EXPECT_EQ(turn2.substr(0, turn1.size()), turn1);
}

TEST(BenchLiveRequest, ChatBodyAndHeaders) {
  const Scenario s = smoke();
  RequestSpec spec = spec_with(4, 11, 50, 0, 0, 20);
  spec.klass = 0;  // critical: independent requests
  spec.tenant = 1;
  spec.output_tokens = 9;
  spec.max_tokens = 16;
  const LiveRequestOptions options;
  EXPECT_STREQ(request_path(s, spec), "/v1/chat/completions");
  const json::object body = json::parse(request_body(s, spec, options)).as_object();
  EXPECT_EQ(body.at("max_tokens").as_int64(), 9);
  EXPECT_EQ(body.at("min_tokens").as_int64(), 9);
  EXPECT_TRUE(body.at("stream").as_bool());
  EXPECT_TRUE(body.at("stream_options").at("include_usage").as_bool());
  const auto& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].at("content").as_string(), prefix_text(spec, 0));
  EXPECT_EQ(messages[1].at("content").as_string(), body_text(spec, 0));

  const std::string raw = raw_request(s, spec, options);
  EXPECT_TRUE(raw.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"));
  EXPECT_NE(raw.find("Authorization: Bearer sk-bench-team-b\r\n"), std::string::npos);
  EXPECT_NE(raw.find("x-arbiter-class: critical\r\n"), std::string::npos);
  EXPECT_EQ(raw.find("x-arbiter-supersede-key"), std::string::npos);
}

TEST(BenchLiveRequest, TypingIsACompletionWithItsSupersedeKey) {
  const Scenario s = smoke();
  RequestSpec spec = spec_with(5, 3, 300, 0, 0, 40);
  spec.klass = 1;  // completion: typing
  spec.supersede_key = 0xabc;
  spec.output_tokens = 12;
  spec.max_tokens = 128;
  LiveRequestOptions options;
  options.exact_lengths = false;
  EXPECT_STREQ(request_path(s, spec), "/v1/completions");
  const json::object body = json::parse(request_body(s, spec, options)).as_object();
  EXPECT_EQ(body.at("prompt").as_string(), prefix_text(spec, 0) + body_text(spec, 0));
  EXPECT_EQ(body.at("max_tokens").as_int64(), 128);
  EXPECT_FALSE(body.contains("min_tokens"));
  EXPECT_NE(raw_request(s, spec, options).find("x-arbiter-supersede-key: 0000000000000abc\r\n"),
            std::string::npos);
  options.gateway_headers = false;
  EXPECT_EQ(raw_request(s, spec, options).find("x-arbiter-"), std::string::npos);
}

TEST(BenchRequestLog, OneJsonLinePerRequestWithTimesOutcomeAndBackend) {
  const Scenario s = smoke();
  const json::object header = json::parse(request_log_header(s, "hybrid", 1700000000.25)).as_object();
  EXPECT_DOUBLE_EQ(header.at("run_start_unix").as_double(), 1700000000.25);
  EXPECT_EQ(header.at("scenario").as_string(), "smoke");
  EXPECT_EQ(header.at("label").as_string(), "hybrid");

  RequestSpec spec = spec_with(42, 0, 0, 0, 0, 10);
  spec.klass = 2;  // chat
  spec.tenant = 1;
  spec.arrival = 1.5;
  spec.output_tokens = 30;
  ExchangeResult r{.outcome = Outcome::kDropped,
                   .first_token = 1.6,
                   .last_token = 1.9,
                   .ended = 2.0,
                   .tokens = 12,
                   .status = 200,
                   .backend = "b1",
                   .note = "stream ended without [DONE]"};
  const std::string line = request_log_line(s, spec, r, true);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json::object o = json::parse(line).as_object();
  EXPECT_EQ(o.at("id").to_number<uint64_t>(), 42u);
  EXPECT_EQ(o.at("class").as_string(), "chat");
  EXPECT_EQ(o.at("tenant").as_string(), "team-b");
  EXPECT_DOUBLE_EQ(o.at("arrival").as_double(), 1.5);
  EXPECT_DOUBLE_EQ(o.at("first_token").as_double(), 1.6);
  EXPECT_DOUBLE_EQ(o.at("last_token").as_double(), 1.9);
  EXPECT_DOUBLE_EQ(o.at("ended").as_double(), 2.0);
  EXPECT_EQ(o.at("outcome").as_string(), "dropped");
  EXPECT_EQ(o.at("status").to_number<uint64_t>(), 200u);
  EXPECT_EQ(o.at("tokens").to_number<uint64_t>(), 12u);
  EXPECT_EQ(o.at("expected_tokens").to_number<uint64_t>(), 30u);
  EXPECT_EQ(o.at("backend").as_string(), "b1");
  EXPECT_EQ(o.at("note").as_string(), "stream ended without [DONE]");
  // Without exact lengths the target decides how long the answer is.
  EXPECT_EQ(json::parse(request_log_line(s, spec, r, false)).at("expected_tokens").to_number<uint64_t>(), 0u);
}

TEST(BenchLiveClient, RefusalsMapToOutcomes) {
  EXPECT_EQ(outcome_of_status(429), Outcome::kRejected);
  EXPECT_EQ(outcome_of_status(503), Outcome::kDropped);
  EXPECT_EQ(outcome_of_status(409), Outcome::kSuperseded);
  EXPECT_EQ(outcome_of_status(400), Outcome::kDropped);
}

TEST(BenchGatewayConfig, TheGatewayLoadsWhatTheScenarioSays) {
  Scenario s = smoke();
  s.classes[1].policy.typing_through = true;  // completion: a keystroke may inherit (live typing along)
  s.classes[0].policy.tpot_slo = std::chrono::microseconds(43'750);  // adaptive capacity's gap target
  s.engine.adaptive.enabled = true;
  std::vector<std::string> warnings;
  GatewayConfigOptions options;
  options.policy = "priority";
  const std::string yaml = gateway_config_yaml(s, options, warnings);
  EXPECT_TRUE(warnings.empty());
  auto config = parse_config(yaml);
  ASSERT_TRUE(config) << config.error().front() << "\n" << yaml;
  EXPECT_EQ(config->scheduler.policy, sched::Policy::kPriority);
  EXPECT_TRUE(config->auth.enabled);
  EXPECT_FALSE(config->log.access_log);
  ASSERT_EQ(config->tenants.size(), s.tenants.size());
  for (std::size_t t = 0; t < s.tenants.size(); ++t) {
    EXPECT_EQ(config->tenants[t].name, s.tenants[t].name);
    EXPECT_EQ(config->tenants[t].weight, s.tenants[t].weight);
    EXPECT_EQ(config->tenants[t].key_sha256.at(0), sha256_hex(tenant_api_key(s.tenants[t].name)));
  }
  ASSERT_EQ(config->classes.size(), s.classes.size());
  for (std::size_t c = 0; c < s.classes.size(); ++c) {
    const sched::ClassPolicy& want = s.classes[c].policy;
    const sched::ClassPolicy& got = config->classes[c].policy;
    EXPECT_EQ(got.name, want.name);
    EXPECT_DOUBLE_EQ(got.min_share, want.min_share);
    EXPECT_DOUBLE_EQ(got.max_share, want.max_share);
    EXPECT_DOUBLE_EQ(got.weight, want.weight);
    EXPECT_EQ(got.max_queue_wait, want.max_queue_wait);
    EXPECT_EQ(got.preemptible, want.preemptible);
    EXPECT_EQ(got.background, want.background);
    EXPECT_EQ(got.max_queue, want.max_queue);
    EXPECT_EQ(got.debounce, want.debounce);
    EXPECT_EQ(got.typing_through, want.typing_through);
    EXPECT_EQ(got.engine_priority, want.engine_priority);
    EXPECT_EQ(got.ttft_slo, want.ttft_slo);
    EXPECT_EQ(got.tpot_slo, want.tpot_slo);
  }
  ASSERT_EQ(config->models.size(), 1u);
  ASSERT_EQ(config->models[0].backends.size(), s.engine.count);
  for (const BackendConfig& b : config->models[0].backends) {
    EXPECT_EQ(b.type, BackendType::kSim);
    EXPECT_EQ(b.sim_profile, s.engine.profile);
    EXPECT_EQ(b.max_concurrency, s.engine.max_concurrency);
  }
}

TEST(BenchGatewayConfig, PoolsAndTheirLendingCarryOver) {
  auto loaded = load_scenario(ARBITER_SOURCE_DIR "/bench/scenarios/completion-vs-chat-pools.yaml");
  ASSERT_TRUE(loaded) << loaded.error();
  Scenario s = *loaded;
  s.pools[1].lend = false;
  std::vector<std::string> warnings;
  auto config = parse_config(gateway_config_yaml(s, GatewayConfigOptions{}, warnings));
  ASSERT_TRUE(config) << config.error().front();
  ASSERT_EQ(config->models.size(), 2u);  // one model, two pools
  EXPECT_EQ(config->models[0].pool_name(), config->models[0].name + "/completion");
  EXPECT_EQ(config->models[1].name, config->models[0].name);
  EXPECT_EQ(config->models[0].backends.size(), s.pools[0].engines);
  EXPECT_TRUE(config->models[0].lends);
  EXPECT_EQ(config->models[1].backends.size(), s.pools[1].engines);
  EXPECT_FALSE(config->models[1].lends);
}

// A scenario's tenant caps are the gateway's tenants[].max_running and
// max_share: live mode holds the tenant to what virtual mode does.
TEST(BenchGatewayConfig, TenantCapsCarryOver) {
  Scenario s = smoke();
  s.tenants[0].max_running = 5;
  s.tenants.push_back({.name = "other", .weight = 1, .max_share = 0.3});
  std::vector<std::string> warnings;
  auto config = parse_config(gateway_config_yaml(s, GatewayConfigOptions{}, warnings));
  ASSERT_TRUE(config) << config.error().front();
  ASSERT_EQ(config->tenants.size(), s.tenants.size());
  EXPECT_EQ(config->tenants[0].max_running, 5u);
  EXPECT_DOUBLE_EQ(config->tenants[0].max_share, 0);
  EXPECT_EQ(config->tenants.back().max_running, 0u);
  EXPECT_DOUBLE_EQ(config->tenants.back().max_share, 0.3);
}

// A scenario's engine.adaptive_capacity is the gateway's adaptive_capacity:
// live mode runs the controller virtual mode runs.
TEST(BenchGatewayConfig, AdaptiveCapacityCarriesOver) {
  Scenario s = smoke();
  s.engine.adaptive.enabled = true;
  s.engine.adaptive.min_limit = 2;
  s.engine.adaptive.max_extra_share = 0.5;
  s.engine.adaptive.itl_target = std::chrono::milliseconds(45);
  std::vector<std::string> warnings;
  auto config = parse_config(gateway_config_yaml(s, GatewayConfigOptions{}, warnings));
  ASSERT_TRUE(config) << config.error().front();
  EXPECT_TRUE(config->adaptive_capacity.enabled);
  EXPECT_EQ(config->adaptive_capacity.min_limit, 2u);
  EXPECT_DOUBLE_EQ(config->adaptive_capacity.max_extra_share, 0.5);
  EXPECT_EQ(config->adaptive_capacity.itl_target, std::chrono::milliseconds(45));
  // Without engine signals virtual mode does not run it: neither does the gateway.
  s.engine.signals = false;
  warnings.clear();
  config = parse_config(gateway_config_yaml(s, GatewayConfigOptions{}, warnings));
  ASSERT_TRUE(config) << config.error().front();
  EXPECT_FALSE(config->adaptive_capacity.enabled);
  EXPECT_FALSE(warnings.empty());
}

TEST(BenchGatewayConfig, EngineUrlsAndWhatCannotBeExpressed) {
  Scenario s = smoke();
  s.engine.max_waiting = 3;
  std::vector<std::string> warnings;
  GatewayConfigOptions options;
  options.engine_urls = {"http://127.0.0.1:9001"};
  const std::string yaml = gateway_config_yaml(s, options, warnings);
  EXPECT_EQ(warnings.size(), 1u);
  auto config = parse_config(yaml);
  ASSERT_TRUE(config) << config.error().front();
  ASSERT_EQ(config->models[0].backends.size(), 1u);
  EXPECT_EQ(config->models[0].backends[0].port, 9001);
}

}  // namespace
}  // namespace arbiter::bench
