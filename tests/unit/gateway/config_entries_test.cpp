// The list entries' key tables (gateway/config_entries) drive the reading,
// the bounds, --print-config and the docs: every key of every entry goes
// through the printer and back, a value out of a row's bounds is refused at
// its path, and docs/configuration.md's tables agree with the tables (keys,
// required ones and literal defaults), a disagreement being caught.
#include "gateway/config_entries.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <set>

#include "../yaml/config_docs.hpp"
#include "gateway/config_print.hpp"
#include "gateway/config_yaml.hpp"
#include "gateway/stages/degrade/degrade_config_section.hpp"
#include "support/temp_dir.hpp"
#include "support/test_pki.hpp"

namespace arbiter {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

template <class Entry>
using EntryReader = bool (*)(YamlReader&, const YAML::Node&, const std::string&, Entry&);

// ---- docs agreement ----

// What the docs' table under `heading` says against an entry's table, one
// line per disagreement: the same keys (with `other_keys`, documented in the
// same table: a class's scheduling keys); `required` exactly for the rows
// that say so and the keys the entry's own check requires; and a literal
// default (the column's first `...`) is what the writer writes for an entry
// read from one of `minimal` (YAML) that leaves the key out.
template <class Entry>
std::vector<std::string> disagreements(const std::string& doc, std::string_view heading,
                                       std::span<const SettingKey<Entry>> keys, EntryReader<Entry> read,
                                       std::initializer_list<const char*> minimal,
                                       std::set<std::string> required_by_check = {},
                                       std::set<std::string> other_keys = {}) {
  std::vector<std::string> out;
  const auto documented = test::documented_keys(doc, heading);
  std::set<std::string> expected = other_keys, in_docs;
  for (const auto& k : keys) expected.insert(std::string(k.key));
  for (const auto& [key, value] : documented) in_docs.insert(key);
  for (const auto& key : expected) {
    if (!in_docs.contains(key)) out.push_back(std::string(key) + ": not in the docs");
  }
  for (const auto& key : in_docs) {
    if (!expected.contains(key)) out.push_back(key + ": documented but no key");
  }
  std::vector<std::pair<YAML::Node, Entry>> defaults;
  for (const char* yaml : minimal) {
    YamlReader r;
    Entry e;
    const YAML::Node node = YAML::Load(yaml);
    if (!read(r, node, "entry", e) || !r.errors.empty()) {
      out.push_back(std::string("minimal entry ") + yaml + " is refused");
    }
    defaults.emplace_back(node, std::move(e));
  }
  for (const auto& k : keys) {
    const std::string key(k.key);
    const auto it = documented.find(key);
    if (it == documented.end()) continue;
    const std::string& column = it->second;
    const bool required = k.required || required_by_check.contains(key);
    if ((column == "required") != required) {
      out.push_back(key + ": docs say '" + column + "', the table " + (required ? "requires it" : "does not"));
    }
    if (!column.starts_with("`")) continue;  // not a literal ("the name", "none")
    const std::string literal = column.substr(1, column.find('`', 1) - 1);
    for (const auto& [node, entry] : defaults) {
      std::string written = k.write(entry);
      if (node[key] || written.empty()) continue;
      if (written.size() >= 2 && written.front() == '"') written = written.substr(1, written.size() - 2);
      if (written != literal) out.push_back(key + ": docs say `" + literal + "`, an entry gets " + written);
      break;
    }
  }
  return out;
}

bool read_dynamic_quota(YamlReader& r, const YAML::Node& node, const std::string& path, quota::DynamicQuotaConfig& d) {
  return read_entry(dynamic_quota_keys(), r, node, path, d);
}
bool read_match(YamlReader& r, const YAML::Node& node, const std::string& path, ClassMatch& m) {
  return read_entry(class_match_keys(), r, node, path, m);
}
bool read_degrade(YamlReader& r, const YAML::Node& node, const std::string& path, overload::ClassActions& a) {
  return read_entry(class_degrade_keys(), r, node, path, a);
}

bool read_alias_target(YamlReader& r, const YAML::Node& node, const std::string& path, rollout::AliasTarget& t) {
  return read_entry(alias_target_keys(), r, node, path, t);
}
bool read_canary(YamlReader& r, const YAML::Node& node, const std::string& path, rollout::CanaryConfig& c) {
  return read_entry(canary_keys(), r, node, path, c);
}

bool read_shadow(YamlReader& r, const YAML::Node& node, const std::string& path, rollout::ShadowConfig& c) {
  return read_entry(shadow_keys(), r, node, path, c);
}

std::vector<std::string> all_disagreements(const std::string& doc) {
  std::vector<std::string> out;
  auto add = [&](std::string_view heading, std::vector<std::string> found) {
    for (auto& line : found) out.push_back(std::string(heading) + " " + line);
  };
  add("tenants", disagreements(doc, "## `tenants`", tenant_keys(), read_tenant,
                               {"{name: t, client_cert_names: [c]}", "{name: t, api_keys: [k]}"}));
  add("teams", disagreements(doc, "## `teams`", team_keys(), read_team, {"{name: t}"}));
  add("dynamic_quota", disagreements(doc, "`dynamic_quota` (the BRIEF", dynamic_quota_keys(), read_dynamic_quota,
                                     {"{members: 2}"}, {"members"}));
  add("quotas", disagreements(doc, "`quotas` entries", quota_keys(), read_quota, {"{max_concurrent: 1}"}));
  std::set<std::string> policy_keys;
  for (const auto& k : class_policy_keys()) policy_keys.insert(std::string(k.key));
  add("classes", disagreements(doc, "## `classes`", class_keys(), read_class, {"{name: gold}"}, {}, policy_keys));
  add("match", disagreements(doc, "`match` keys", class_match_keys(), read_match, {"{}"}));
  add("degrade", disagreements(doc, "`degrade` keys", class_degrade_keys(), read_degrade, {"{}"}));
  add("models", disagreements(doc, "## `models`", model_keys(), read_model,
                              {"{name: m, backends: [{type: sim}]}"}));
  add("backends", disagreements(doc, "`backends` entries:", backend_keys(), read_backend,
                                {"{url: \"http://127.0.0.1:8000\"}", "{type: sim}"}, {"url"}));
  add("aliases", disagreements(doc, "## `aliases`", alias_keys(), read_alias, {"{name: a, targets: [{model: m}]}"}));
  add("alias targets", disagreements(doc, "`targets` entries:", alias_target_keys(), read_alias_target, {"{model: m}"}));
  add("canary", disagreements(doc, "`canary`:", canary_keys(), read_canary, {"{target: m}"}));
  add("shadow", disagreements(doc, "`shadow`:", shadow_keys(), read_shadow, {"{model: m}"}));
  add("prices", disagreements(doc, "## `prices`", price_keys(), read_price,
                              {"{model: m, per_gpu_second: 1}", "{model: m, input_per_million: 1}"}));
  return out;
}

TEST(ConfigEntries, TheDocsDocumentEveryEntryWithItsTable) {
  EXPECT_THAT(all_disagreements(test::configuration_md()), ::testing::IsEmpty());
}

TEST(ConfigEntries, ADisagreementWithTheDocsIsCaught) {
  const std::string doc = test::configuration_md();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string d = doc;
    const auto at = d.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? d : d.replace(at, from.size(), to);
  };
  // A default that is not what an entry gets.
  EXPECT_THAT(all_disagreements(replaced("| `max_concurrency` | `64` |", "| `max_concurrency` | `32` |")),
              Contains(HasSubstr("backends max_concurrency: docs say `32`, an entry gets 64")));
  // A key the docs lose, and one they invent.
  EXPECT_THAT(all_disagreements(replaced("| `lend` |", "| `lends` |")),
              ::testing::IsSupersetOf({HasSubstr("backends lend: not in the docs"),
                                       HasSubstr("backends lends: documented but no key")}));
  // A required key documented as optional.
  EXPECT_THAT(all_disagreements(replaced("| `model` | required | a model of `models`", "| `model` | none | a model of `models`")),
              Contains(HasSubstr("prices model: docs say 'none', the table requires it")));
}

// ---- bounds ----

// Each numeric row of `keys` refuses a value below its bounds at its path
// (the entry at `path` inside `config`, where `{KEY}` stands for "key: value").
template <class Entry>
void expect_bounds_refused(std::span<const SettingKey<Entry>> keys, const std::string& config,
                           const std::string& path) {
  int checked = 0;
  for (const auto& k : keys) {
    const bool integer = k.kind.starts_with("integer in [");
    if (!integer && !k.kind.starts_with("number in [")) continue;
    SCOPED_TRACE(std::string(k.key));
    std::string yaml = config;
    const std::string value = std::string(k.key) + ": " + (integer ? "-4611686018427387904" : "-1e300");
    yaml.replace(yaml.find("{KEY}"), 5, value);
    auto parsed = parse_config(yaml);
    ASSERT_FALSE(parsed) << yaml;
    EXPECT_THAT(parsed.error(), Contains(HasSubstr(path + "." + std::string(k.key) + ": must be between")));
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(ConfigEntries, EachEntryRefusesAValueOutOfARowsBounds) {
  const std::string model = "models: [{name: m1, backends: [{url: \"http://127.0.0.1:8000\"}]}]\n";
  expect_bounds_refused(tenant_keys(), "tenants: [{name: t, api_keys: [k], {KEY}}]\n" + model, "tenants[0]");
  expect_bounds_refused(quota_keys(), "tenants: [{name: t, api_keys: [k], quotas: [{{KEY}}]}]\n" + model,
                        "tenants[0].quotas[0]");
  expect_bounds_refused(dynamic_quota_keys(),
                        "tenants: [{name: t, api_keys: [k], team: a}]\n"
                        "teams: [{name: a, dynamic_quota: {{KEY}}}]\n" + model,
                        "teams[0].dynamic_quota");
  expect_bounds_refused(class_keys(), "classes: [{name: c, {KEY}}]\n" + model, "classes[0]");
  expect_bounds_refused(class_match_keys(), "classes: [{name: c, match: {{KEY}}}]\n" + model, "classes[0].match");
  expect_bounds_refused(class_degrade_keys(), "classes: [{name: c, degrade: {{KEY}}}]\n" + model,
                        "classes[0].degrade");
  expect_bounds_refused(backend_keys(), "models: [{name: m1, backends: [{type: sim, {KEY}}]}]\n",
                        "models[0].backends[0]");
  expect_bounds_refused(price_keys(), model + "prices: [{model: m1, {KEY}}]\n", "prices[0]");
}

// ---- --print-config and back ----

// Whether some entry of the list `node` gives `key`.
bool some_entry_has(const YAML::Node& list, std::string_view key) {
  for (const auto& entry : list) {
    if (entry[std::string(key)]) return true;
  }
  return false;
}

// Every key of `keys` is given by some entry of the list at `node` (the
// input covers the table), is written for it, and reads back to the same
// text.
template <class Entry>
void expect_round_trip(std::span<const SettingKey<Entry>> keys, const YAML::Node& list,
                       const std::vector<Entry>& before, const std::vector<Entry>& after,
                       std::set<std::string_view> never_written = {}) {
  for (const auto& k : keys) {
    SCOPED_TRACE(std::string(k.key));
    EXPECT_TRUE(some_entry_has(list, k.key)) << "the test's config leaves this key out";
  }
  ASSERT_EQ(before.size(), after.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    for (const auto& k : keys) {
      SCOPED_TRACE(std::string(k.key) + " of entry " + std::to_string(i));
      EXPECT_EQ(k.write(after[i]), k.write(before[i]));
      if (list[i][std::string(k.key)] && !never_written.contains(k.key)) {
        EXPECT_NE(k.write(before[i]), "");
      }
    }
  }
}

TEST(ConfigEntries, EveryKeyOfEveryEntryGoesThroughPrintConfigAndBack) {
  test::TempDir dir("config-entries");
  test::TestPki pki(dir.path(), "test");
  pki.issue_server("server");
  pki.issue("client", {.common_name = "gateway"});
  const std::string key_file = dir.write("engine.key", "s3cret\n");
  ::setenv("ARBITER_TEST_ENGINE_KEY", "k", 1);
  const std::string hash = std::string(64, 'a');
  const std::string yaml =
      "listener: {tls: {cert_file: " + pki.cert("server") + ", key_file: " + pki.key("server") +
      ", client_cert: optional, client_ca_file: " + pki.ca_file() + "}}\n"
      "tenants:\n"
      "  - {name: a, team: ta, weight: 2.5, max_running: 12, max_share: 0.25, api_keys: [k1], api_key_sha256: [" + hash + "],\n"
      "     max_priority_raise: 3, min_ttft_hint_ms: 250,\n"
      "     client_cert_names: [svc.a], allowed_classes: [gold], quota_store_down: closed,\n"
      "     quotas: [{requests_per_minute: 10, tokens_per_minute: 20, tokens_per_day: 30, max_concurrent: 4,\n"
      "               classes: [gold], models: [m1]}]}\n"
      "  - {name: b, api_keys: [k2], team: ta}\n"
      "teams: [{name: ta, quotas: [{max_concurrent: 9}],\n"
      "         dynamic_quota: {members: 3, per_member: 7, complexity: 1.5, limit: tokens_per_minute, recompute_s: 60}}]\n"
      "classes:\n"
      "  - {name: gold, match: {routes: [/v1/completions], models: [m1], tenants: [a], max_tokens_at_least: 2,\n"
      "     max_tokens_at_most: 900}, max_tokens_cap: 77, supersede_by_user: true}\n"
      "  - {name: chat, degrade: {protect: false, cap_max_tokens: 300, pause: true, variant: false, shed: true},\n"
      "     cache: {enabled: true, near: false, tools: true}}\n"
      "models:\n"
      "  - name: m1\n"
      "    degraded: m2\n"
      "    fallback: m3\n"
      "    backends:\n"
      "      - {name: e1, url: \"https://127.0.0.1:8443\", ca_file: " + pki.ca_file() + ", cert_file: " +
      pki.cert("client") + ", key_file: " + pki.key("client") + ",\n"
      "         max_concurrency: 9, priority_scheduling: true, stream_usage: false, prefill_tokens_per_s: 1234,\n"
      "         prefix_cache_tokens: 4096, classes: [gold], lend: true, api_key_env: ARBITER_TEST_ENGINE_KEY,\n"
      "         engine: sglang, continue_final_message: true, type: http, adapters: [sql-lora], max_loras: 3, responses: true}\n"
      "      - {url: \"http://127.0.0.1:8000\", api_key_file: " + key_file + ", priority_scheduling: true}\n"
      "  - name: m2\n"
      "    adaptive_capacity: {enabled: true, max_extra_share: 0.5}\n"
      "    backends: [{type: sim, profile: tiny, max_num_seqs: 3}]\n"
      "  - name: m3\n"
      "    cache: false\n"
      "    backends: [{type: sim}]\n"
      "prices: [{model: m1, input_per_million: 1, output_per_million: 2, cached_input_per_million: 0.5,\n"
      "          per_gpu_second: 0.25}]\n";
  auto config = parse_config(yaml);
  ASSERT_TRUE(config) << ::testing::PrintToString(config.error());
  const std::string printed = config_to_yaml(*config);
  auto again = parse_config(printed);
  ASSERT_TRUE(again) << ::testing::PrintToString(again.error()) << "\n" << printed;
  EXPECT_EQ(config_to_yaml(*again), printed);

  const YAML::Node root = YAML::Load(yaml);
  expect_round_trip(tenant_keys(), root["tenants"], config->tenants, again->tenants, {"api_keys"});
  EXPECT_EQ(again->tenants[0].key_sha256, config->tenants[0].key_sha256);  // api_keys, as their hashes
  expect_round_trip(team_keys(), root["teams"], config->teams, again->teams);
  YAML::Node dynamic(YAML::NodeType::Sequence);
  dynamic.push_back(root["teams"][0]["dynamic_quota"]);
  expect_round_trip(dynamic_quota_keys(), dynamic, std::vector{*config->teams[0].dynamic_quota},
                    std::vector{*again->teams[0].dynamic_quota});
  expect_round_trip(quota_keys(), root["tenants"][0]["quotas"], config->tenants[0].quotas, again->tenants[0].quotas);
  expect_round_trip(class_keys(), root["classes"], config->classes, again->classes);
  YAML::Node match(YAML::NodeType::Sequence);
  match.push_back(root["classes"][0]["match"]);
  expect_round_trip(class_match_keys(), match, std::vector{*config->classes[0].match},
                    std::vector{*again->classes[0].match});
  YAML::Node class_cache(YAML::NodeType::Sequence);
  class_cache.push_back(root["classes"][1]["cache"]);
  expect_round_trip(class_cache_keys(), class_cache, std::vector{config->classes[1].cache},
                    std::vector{again->classes[1].cache});
  YAML::Node degrade(YAML::NodeType::Sequence);
  degrade.push_back(root["classes"][1]["degrade"]);
  expect_round_trip(class_degrade_keys(), degrade, std::vector{*config->classes[1].degrade},
                    std::vector{*again->classes[1].degrade});
  // models[0] is split into two pools (gold, the rest); the model entries'
  // keys and the backends of every pool.
  std::vector<BackendConfig> backends, backends_again;
  for (const auto* c : {&*config, &*again}) {
    auto& out = c == &*config ? backends : backends_again;
    for (const ModelConfig& pool : c->models) out.insert(out.end(), pool.backends.begin(), pool.backends.end());
  }
  YAML::Node all_backends(YAML::NodeType::Sequence);
  for (const auto& m : root["models"]) {
    for (const auto& b : m["backends"]) all_backends.push_back(b);
  }
  expect_round_trip(backend_keys(), all_backends, backends, backends_again);
  for (const auto& k : model_keys()) EXPECT_TRUE(some_entry_has(root["models"], k.key)) << k.key;
  ASSERT_EQ(again->models.size(), config->models.size());
  for (std::size_t i = 0; i < config->models.size(); ++i) {
    EXPECT_EQ(again->models[i].name, config->models[i].name);
    EXPECT_EQ(again->models[i].degraded, config->models[i].degraded);
    EXPECT_EQ(again->models[i].fallback, config->models[i].fallback);
    for (const auto& k : model_keys()) EXPECT_EQ(k.write(again->models[i]), k.write(config->models[i])) << k.key;
  }
  const auto key_named = [](std::string_view name) {
    for (const auto& k : model_keys()) {
      if (k.key == name) return k;
    }
    throw std::logic_error("no model key " + std::string(name));
  };
  EXPECT_NE(key_named("adaptive_capacity").write(config->models[2]), "");  // m2's own adaptive_capacity is printed
  EXPECT_EQ(key_named("cache").write(config->models[3]), "false");         // m3 left out of the result cache
  std::vector<ModelPrice> prices{*config->models[0].price}, prices_again{*again->models[0].price};
  expect_round_trip(price_keys(), root["prices"], prices, prices_again);
  ::unsetenv("ARBITER_TEST_ENGINE_KEY");
}

// Typing through is live (streaming completions hand the running generation
// over, docs/scheduler.md): the switch loads either way.
TEST(ConfigEntries, TypingThroughLoads) {
  const std::string head = "models: [{name: m1, backends: [{url: \"http://127.0.0.1:8000\"}]}]\n";
  const auto on = parse_config(head + "classes: [{name: completion, typing_through: true}]\n");
  ASSERT_TRUE(on) << on.error().front();
  EXPECT_TRUE(on->classes.front().policy.typing_through);
  EXPECT_TRUE(parse_config(head + "classes: [{name: completion, typing_through: false}]\n"));
}

}  // namespace
}  // namespace arbiter
