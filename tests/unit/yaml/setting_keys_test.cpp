// The key tables of the class and scheduler sections: docs/configuration.md
// documents exactly these keys with these defaults, and the gateway's config
// and arbiter-bench's scenarios take them with the same names and bounds.
#include "yaml/setting_keys.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "bench/scenario_yaml.hpp"
#include "gateway/config_print.hpp"
#include "gateway/config_yaml.hpp"
#include "gateway/cors_section.hpp"
#include "gateway/config_entries.hpp"
#include "gateway/resilience/resilience_config_section.hpp"
#include "gateway/stages/breaker/breaker_config_section.hpp"
#include "gateway/stages/quota/quota_config_section.hpp"
#include "config_docs.hpp"

namespace arbiter {
namespace {

// `text` as the docs write a value: in backticks. (Appended, not "`" + text
// + "`": GCC 12 warns wrongly about that, -Wrestrict.)
std::string code(const std::string& text) { return std::string("`").append(text).append("`"); }

// The key table under docs/configuration.md's `heading`: key -> default column.
std::map<std::string, std::string> documented_keys(std::string_view heading) {
  return test::documented_keys(test::configuration_md(), heading);
}

TEST(ClassPolicyKeys, TheDocsDocumentExactlyTheseKeysWithTheseDefaults) {
  const auto documented = documented_keys("## `classes`");
  std::set<std::string> expected;
  for (const auto& k : class_keys()) expected.insert(std::string(k.key));
  for (const ClassPolicyKey& k : class_policy_keys()) expected.insert(std::string(k.key));
  std::set<std::string> in_docs;
  for (const auto& [key, value] : documented) in_docs.insert(key);
  EXPECT_EQ(in_docs, expected) << "docs/configuration.md's classes table and yaml/setting_keys.cpp disagree";
  // A documented literal default is what a class gets without the key.
  const sched::ClassPolicy plain;
  for (const ClassPolicyKey& k : class_policy_keys()) {
    const auto it = documented.find(std::string(k.key));
    if (it == documented.end() || !it->second.starts_with("`")) continue;  // e.g. "per class"
    EXPECT_EQ(it->second, code(k.write(plain))) << k.key;
  }
}

TEST(SchedulerKeys, TheDocsDocumentExactlyTheseKeysWithTheseDefaults) {
  const auto documented = documented_keys("## `scheduler`");
  std::set<std::string> expected, in_docs;
  for (const SchedulerKey& k : scheduler_keys()) expected.insert(std::string(k.key));
  for (const auto& [key, value] : documented) in_docs.insert(key);
  EXPECT_EQ(in_docs, expected) << "docs/configuration.md's scheduler table and yaml/setting_keys.cpp disagree";
  const sched::SchedulerTunables plain;
  for (const SchedulerKey& k : scheduler_keys()) {
    const auto it = documented.find(std::string(k.key));
    if (it != documented.end()) {
      EXPECT_EQ(it->second, code(k.write(plain))) << k.key;
    }
  }
}

// A flat section's table against its docs table: the same keys, and each
// documented literal default is what the section gets without the key.
template <class Settings>
void expect_documented(std::string_view heading, std::span<const SettingKey<Settings>> keys) {
  SCOPED_TRACE(std::string(heading));
  const auto documented = documented_keys(heading);
  std::set<std::string> expected, in_docs;
  for (const auto& k : keys) expected.insert(std::string(k.key));
  for (const auto& [key, value] : documented) in_docs.insert(key);
  EXPECT_EQ(in_docs, expected) << "docs/configuration.md and yaml/setting_keys.cpp disagree";
  const Settings plain{};
  for (const auto& k : keys) {
    const auto it = documented.find(std::string(k.key));
    std::string written = k.write(plain);
    if (written.size() >= 2 && written.front() == '"') written = written.substr(1, written.size() - 2);  // text
    if (it != documented.end()) {
      EXPECT_EQ(it->second, code(written)) << k.key;
    }
  }
}

TEST(SettingKeys, EveryFlatSectionIsDocumentedExactly) {
  expect_documented("## `listener`", listener_keys());
  expect_documented("## `admin`", admin_keys());
  expect_documented("## `listener.tls`", listener_tls_keys());
  expect_documented("## `limits`", limits_keys());
  expect_documented("## `timeouts`", timeouts_keys());
  expect_documented("## `auth`", auth_keys());
  expect_documented("## `engine_signals`", engine_signals_keys());
  expect_documented("## `adaptive_capacity`", adaptive_capacity_keys());
  expect_documented("## `log`", log_keys());
  expect_documented("## `quota_store`", quota_store_keys());
  expect_documented("## `traffic_breaker`", traffic_breaker_keys());
  expect_documented("## `outlier_detection`", outlier_detection_keys());
  expect_documented("## `retries`", retries_keys());
  expect_documented("## `health_probes`", health_probes_keys());
  expect_documented("## `model_breaker`", model_breaker_keys());
  expect_documented("## `cors`", cors_keys());
}

// Every feature's section (gateway/config_section.hpp) has its docs table,
// is taken at the top level of a config and printed by --print-config.
TEST(SettingKeys, EveryFeatureSectionIsDocumentedReadAndPrinted) {
  const std::string printed = config_to_yaml(*parse_config("models: [{name: m1, backends: [{url: \"http://127.0.0.1:8000\"}]}]\n"));
  for (const ConfigSection& section : feature_sections()) {
    const std::string name(section.name);
    SCOPED_TRACE(name);
    // Appended, not "a" + name + "b": GCC 12 warns wrongly about that (-Wrestrict).
    std::string heading = "## `";
    heading.append(name).append("`");
    EXPECT_FALSE(documented_keys(heading).empty()) << "no table under " << heading << " in docs/configuration.md";
    EXPECT_NE(printed.find(std::string("\n").append(name).append(": {")), std::string::npos) << printed;
    const auto unknown = parse_config(std::string(name).append(": {no_such_key: 1}\n"
                                                               "models: [{name: m1, backends: [{url: \"http://127.0.0.1:8000\"}]}]\n"));
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().front().find(name), std::string::npos) << unknown.error().front();
  }
}

TEST(SchedulerKeys, GatewayAndScenarioTakeTheSameNamesAndBounds) {
  // The bench used to allow a 3,600,000 ms prefill backlog; the gateway 60,000.
  auto g = parse_config("scheduler: {max_prefill_backlog_ms: 70000}\n"
                        "models: [{name: m1, backends: [{url: \"http://127.0.0.1:8000\"}]}]\n");
  auto s = bench::parse_scenario("name: t\nduration_s: 10\nscheduler: {max_prefill_backlog_ms: 70000}\n"
                                 "classes: [{name: c, traffic: {kind: requests, rate: 1}}]\n");
  ASSERT_FALSE(g);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("must be between 0 and 60000"), std::string::npos) << s.error();
  // A scenario compares policies: `policy` is the run's, not the file's.
  EXPECT_FALSE(bench::parse_scenario("name: t\nduration_s: 10\nscheduler: {policy: fifo}\n"
                                     "classes: [{name: c, traffic: {kind: requests, rate: 1}}]\n"));
  auto ok = bench::parse_scenario("name: t\nduration_s: 10\nscheduler: {affinity_load_slack: 0.5}\n"
                                  "classes: [{name: c, traffic: {kind: requests, rate: 1}}]\n");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_DOUBLE_EQ(ok->scheduler.affinity_load_slack, 0.5);
}

TEST(ClassPolicyKeys, GatewayAndScenarioTakeTheSameNamesAndBounds) {
  const std::string gateway_head = "models: [{name: m1, backends: [{url: \"http://127.0.0.1:8000\"}]}]\n";
  const std::string scenario_head = "name: t\nduration_s: 10\n";
  for (const ClassPolicyKey& k : class_policy_keys()) {
    if (k.key == "ttft_slo_ms") continue;  // a scenario says it as slo.ttft_ms
    SCOPED_TRACE(std::string(k.key));
    // An out-of-range or malformed value is refused by both, with the same words.
    const std::string bad = std::string(k.key) + ": -7.5";
    auto g = parse_config(gateway_head + "classes: [{name: c, " + bad + "}]\n");
    auto s = bench::parse_scenario(scenario_head + "classes: [{name: c, scheduler: {" + bad +
                                   "}, traffic: {kind: requests, rate: 1}}]\n");
    ASSERT_FALSE(g);
    ASSERT_FALSE(s);
    const std::string gateway_error = g.error().front().substr(g.error().front().find(": ") + 2);
    EXPECT_NE(s.error().find(gateway_error), std::string::npos) << s.error() << " vs " << gateway_error;
  }
  // And the engine priority is `priority` in both.
  EXPECT_TRUE(bench::parse_scenario(scenario_head +
                                    "classes: [{name: c, scheduler: {priority: 3}, traffic: {kind: requests, rate: 1}}]\n"));
  EXPECT_FALSE(bench::parse_scenario(
      scenario_head + "classes: [{name: c, scheduler: {engine_priority: 3}, traffic: {kind: requests, rate: 1}}]\n"));
}

}  // namespace
}  // namespace arbiter
