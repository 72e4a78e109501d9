// What a config reload compares (gateway/reload/config_change) and keeps
// (config_versions), and how the usage ledger keeps its names across one.
#include <gtest/gtest.h>

#include "core/usage_ledger/usage_ledger.hpp"
#include "gateway/config_yaml.hpp"
#include "gateway/config_change.hpp"
#include "gateway/reload/config_versions.hpp"

namespace arbiter::config_change_test {
namespace {

Config parse(const std::string& yaml) {
  auto config = parse_config(yaml);
  EXPECT_TRUE(config) << ::testing::PrintToString(config.error());
  return config ? std::move(*config) : Config{};
}

const std::string kModels =
    "models:\n"
    "  - name: a\n"
    "    backends: [{name: a1, url: \"http://127.0.0.1:9001\"}, {name: a2, url: \"http://127.0.0.1:9002\"}]\n"
    "  - name: b\n"
    "    backends: [{name: b1, url: \"http://127.0.0.1:9003\"}]\n";

TEST(ConfigChange, ListenerAndQuotaStoreChangesNeedARestartQuotasAndTenantsDoNot) {
  const Config running = parse(kModels + "tenants: [{name: t1, api_keys: [k1], quotas: [{requests_per_minute: 10}]}]\n");
  const Config same = parse(kModels + "tenants: [{name: t1, api_keys: [k1], quotas: [{requests_per_minute: 10}]}]\n");
  EXPECT_TRUE(restart_only_changes(PrintedConfig(running), PrintedConfig(same)).empty());
  const Config more_tenants = parse(kModels +
                                    "tenants: [{name: t0, api_keys: [k0]},"
                                    " {name: t1, api_keys: [k9], quotas: [{requests_per_minute: 10}]}]\n");
  EXPECT_TRUE(restart_only_changes(PrintedConfig(running), PrintedConfig(more_tenants)).empty());
  const Config quota = parse(kModels + "tenants: [{name: t1, api_keys: [k1], quotas: [{requests_per_minute: 20}]}]\n");
  EXPECT_TRUE(restart_only_changes(PrintedConfig(running), PrintedConfig(quota)).empty());
  const Config breaker = parse(kModels + "traffic_breaker: {block_at: 5}\n"
                                         "tenants: [{name: t1, api_keys: [k1], quotas: [{requests_per_minute: 10}]}]\n");
  EXPECT_TRUE(restart_only_changes(PrintedConfig(running), PrintedConfig(breaker)).empty());
  const Config store = parse(kModels + "quota_store: {redis: \"127.0.0.1:6379\"}\n"
                                       "tenants: [{name: t1, api_keys: [k1], quotas: [{requests_per_minute: 10}]}]\n");
  EXPECT_EQ(restart_only_changes(PrintedConfig(running), PrintedConfig(store)), (std::vector<std::string>{"quota_store"}));
  const Config listener = parse(kModels + "listener: {port: 1234}\n"
                                          "tenants: [{name: t1, api_keys: [k1], quotas: [{requests_per_minute: 10}]}]\n");
  EXPECT_EQ(restart_only_changes(PrintedConfig(running), PrintedConfig(listener)), (std::vector<std::string>{"listener"}));
  // Tracing: the share of requests traced is reloaded; where they go is not.
  const std::string tenants = "tenants: [{name: t1, api_keys: [k1], quotas: [{requests_per_minute: 10}]}]\n";
  const Config traced = parse(kModels + "tracing: {endpoint: \"http://127.0.0.1:4318/v1/traces\", sample: 0.1}\n" + tenants);
  const Config more = parse(kModels + "tracing: {endpoint: \"http://127.0.0.1:4318/v1/traces\", sample: 0.5}\n" + tenants);
  const Config elsewhere = parse(kModels + "tracing: {endpoint: \"http://127.0.0.1:4319/v1/traces\", sample: 0.1}\n" + tenants);
  EXPECT_TRUE(restart_only_changes(PrintedConfig(traced), PrintedConfig(more)).empty());
  EXPECT_EQ(restart_only_changes(PrintedConfig(traced), PrintedConfig(elsewhere)),
            (std::vector<std::string>{"tracing.endpoint"}));
  EXPECT_EQ(restart_only_changes(PrintedConfig(running), PrintedConfig(traced)),
            (std::vector<std::string>{"tracing.endpoint"}));
  // The Batch API's folder and bounds: a restart.
  const Config batches = parse(kModels + "batches: {max_lines: 10}\n" + tenants);
  EXPECT_EQ(restart_only_changes(PrintedConfig(running), PrintedConfig(batches)), (std::vector<std::string>{"batches"}));
}

TEST(ConfigChange, TheMapGoesByNames) {
  const Config running = parse(kModels + "tenants: [{name: t1, api_keys: [k1]}, {name: t2, api_keys: [k2]}]\n");
  const Config next = parse(
      "models:\n"
      "  - name: b\n"
      "    backends: [{name: b1, url: \"http://127.0.0.1:9003\"}]\n"
      "  - name: a\n"
      "    backends: [{name: a2, url: \"http://127.0.0.1:9002\"}, {name: a3, url: \"http://127.0.0.1:9004\"}]\n"
      "tenants: [{name: t2, api_keys: [k2]}]\n");
  const CarryMap map = carry_map(running, next);
  ASSERT_EQ(map.pools.size(), 2u);
  EXPECT_EQ(map.pools[0], 1u);  // a moved to the second place
  EXPECT_EQ(map.pools[1], 0u);
  EXPECT_EQ(map.backends[0], (std::vector<std::optional<sched::BackendId>>{std::nullopt, 0u}));  // a1 gone
  EXPECT_EQ(map.backends[1], (std::vector<std::optional<sched::BackendId>>{0u}));
  EXPECT_EQ(map.tenants, (std::vector<std::optional<sched::TenantId>>{std::nullopt, 0u, 1u}));  // anonymous last
  EXPECT_EQ(map.classes.size(), running.classes.size());
  for (std::size_t c = 0; c < map.classes.size(); ++c) EXPECT_EQ(map.classes[c], c);
  EXPECT_EQ(changed_models(PrintedConfig(running), PrintedConfig(next)), (std::vector<std::string>{"a"}));
}

TEST(ConfigVersions, KeepsTheRunningOneAndThreeBeforeItEachOnce) {
  auto version = [](std::string text) {
    return ConfigVersion{.hash = config_hash(text), .applied_at = {}, .source = "test", .text = text};
  };
  ConfigVersions versions(version("v0"));
  for (const char* v : {"v1", "v2", "v3", "v4"}) versions.applied(version(v));
  EXPECT_EQ(versions.current().text, "v4");
  ASSERT_EQ(versions.previous().size(), 3u);
  EXPECT_EQ(versions.previous()[0].text, "v3");
  EXPECT_EQ(versions.previous()[2].text, "v1");
  EXPECT_EQ(versions.find(config_hash("v0")), nullptr);  // forgotten
  ASSERT_NE(versions.find(config_hash("v2").substr(0, 8)), nullptr);
  EXPECT_EQ(versions.find(config_hash("v2").substr(0, 8))->text, "v2");
  EXPECT_EQ(versions.find(config_hash("v2").substr(0, 5)), nullptr);  // too short to name one
  versions.applied(version("v2"));  // a rollback: v2 runs, and is listed once
  EXPECT_EQ(versions.current().text, "v2");
  ASSERT_EQ(versions.previous().size(), 3u);
  EXPECT_EQ(versions.previous()[0].text, "v4");
  EXPECT_EQ(versions.previous()[1].text, "v3");
  EXPECT_EQ(versions.previous()[2].text, "v1");
  EXPECT_EQ(config_hash("v2").size(), 16u);
}

TEST(UsageLedger, AdoptKeepsIdsByNameAndAppendsNewOnes) {
  usage::UsageLedger ledger(usage::Names{.tenants = {"t1", "anonymous"},
                                         .teams = {"x", "anonymous"},
                                         .models = {"a"},
                                         .classes = {"chat"}});
  const usage::NameIds ids = ledger.adopt(usage::Names{.tenants = {"t2", "t1", "t1-moved", "anonymous"},
                                                       .teams = {"y", "x", "z", "anonymous"},
                                                       .models = {"b", "a"},
                                                       .classes = {"chat", "batch"}});
  EXPECT_EQ(ids.tenants, (std::vector<uint32_t>{2, 0, 3, 1}));
  EXPECT_EQ(ids.models, (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(ids.classes, (std::vector<uint32_t>{0, 1}));
  // A key in the adopted ids is recorded (one outside the names would throw).
  ledger.record(usage::WallTime{} + std::chrono::hours(1), {.tenant = 3, .model = 1, .klass = 1}, {.requests = 1});
  EXPECT_EQ(ledger.names().tenants.size(), 4u);
}

}  // namespace
}  // namespace arbiter::config_change_test
