// The class keys' one table: docs/configuration.md documents exactly these
// keys with these defaults, and the gateway's config and arbiter-bench's
// scenarios take them with the same names and bounds.
#include "yaml/class_policy_keys.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "bench/scenario_yaml.hpp"
#include "gateway/config_yaml.hpp"

namespace arbiter {
namespace {

// The `classes` key table of docs/configuration.md: key -> default column.
std::map<std::string, std::string> documented_class_keys() {
  std::ifstream in(ARBITER_SOURCE_DIR "/docs/configuration.md");
  std::string line;
  while (std::getline(in, line) && !line.starts_with("## `classes`")) {
  }
  std::map<std::string, std::string> keys;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.starts_with("| `")) {
      in_table = true;
      const std::size_t key_end = line.find("` |");
      const std::string key = line.substr(3, key_end - 3);
      const std::size_t def_start = key_end + 4;
      keys[key] = line.substr(def_start, line.find(" |", def_start) - def_start);
    } else if (in_table) {
      break;  // the table ended
    }
  }
  return keys;
}

TEST(ClassPolicyKeys, TheDocsDocumentExactlyTheseKeysWithTheseDefaults) {
  const auto documented = documented_class_keys();
  std::set<std::string> expected = {"name", "match", "max_tokens_cap", "supersede_by_user"};
  for (const ClassPolicyKey& k : class_policy_keys()) expected.insert(std::string(k.key));
  std::set<std::string> in_docs;
  for (const auto& [key, value] : documented) in_docs.insert(key);
  EXPECT_EQ(in_docs, expected) << "docs/configuration.md's classes table and yaml/class_policy_keys.cpp disagree";
  // A documented literal default is what a class gets without the key.
  const sched::ClassPolicy plain;
  for (const ClassPolicyKey& k : class_policy_keys()) {
    const auto it = documented.find(std::string(k.key));
    if (it == documented.end() || !it->second.starts_with("`")) continue;  // e.g. "per class"
    EXPECT_EQ(it->second, "`" + k.write(plain) + "`") << k.key;
  }
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
