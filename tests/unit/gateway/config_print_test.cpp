// --print-config: the effective configuration as YAML reads back to itself
// (every key the printer writes, the reader takes, with the same value),
// and shows what a class named like a built-in one inherited.
#include "gateway/config_print.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "gateway/config_yaml.hpp"
#include "yaml/yaml_reader.hpp"

namespace arbiter {
namespace {

std::string file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ConfigPrint, EveryExampleReadsBackToTheSameConfiguration) {
  for (const char* name : {"minimal", "demo", "production"}) {
    SCOPED_TRACE(name);
    auto config = parse_config(file(std::string(ARBITER_SOURCE_DIR "/examples/") + name + ".yaml"));
    ASSERT_TRUE(config) << ::testing::PrintToString(config.error());
    const std::string printed = config_to_yaml(*config);
    auto again = parse_config(printed);
    ASSERT_TRUE(again) << ::testing::PrintToString(again.error()) << "\n" << printed;
    EXPECT_EQ(config_to_yaml(*again), printed);
    EXPECT_EQ(again->models.size(), config->models.size());  // the same pools
    EXPECT_EQ(printed.find("api_keys"), std::string::npos);  // hashes only
  }
}

// Found by fuzz/fuzz_config_yaml in a clean clone's CI run: a name with a
// double quote was printed between quotes unescaped, so --print-config wrote
// YAML that does not parse.
TEST(ConfigPrint, NamesWithQuotesAndBackslashesReadBack) {
  // Single-quoted in the input: `"` and `\` are plain characters there.
  auto config = parse_config(R"(models:
  - name: 'demo "coder" \ o!":"Hello!"}]'
    backends: [{type: sim, profile: tiny}]
)");
  ASSERT_TRUE(config.has_value()) << config.error().front();
  EXPECT_EQ(config->models[0].name, R"(demo "coder" \ o!":"Hello!"}])");
  const std::string printed = config_to_yaml(*config);
  auto again = parse_config(printed);
  ASSERT_TRUE(again.has_value()) << again.error().front() << "\n" << printed;
  EXPECT_EQ(again->models[0].name, config->models[0].name);
  EXPECT_EQ(again->models[0].backends[0].name, config->models[0].backends[0].name);
  EXPECT_EQ(config_to_yaml(*again), printed);
}

TEST(ConfigPrint, QuotedTextEscapesWhatWouldEndOrBreakTheScalar) {
  EXPECT_EQ(YamlReader::quote("plain"), "\"plain\"");
  EXPECT_EQ(YamlReader::quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(YamlReader::quote(std::string("tab\tnul") + '\0'), "\"tab\\x09nul\\x00\"");
  // What yaml-cpp reads back is the original text.
  const std::string raw = std::string("x\"y\\z\x01\n") + '\0';
  EXPECT_EQ(YAML::Load("k: " + YamlReader::quote(raw))["k"].as<std::string>(), raw);
}

TEST(ConfigPrint, AListedBuiltInClassKeepsItsSchedulingDefaults) {
  // production.yaml lists critical, completion, chat and batch with match
  // rules and caps only: batch stays background, critical keeps its guarantee.
  auto config = parse_config(file(ARBITER_SOURCE_DIR "/examples/production.yaml"));
  ASSERT_TRUE(config) << ::testing::PrintToString(config.error());
  EXPECT_EQ(config->inherited_classes, (std::vector<std::string>{"critical", "completion", "chat", "batch"}));
  for (const ClassConfig& c : config->classes) {
    if (c.name == "batch") {
      EXPECT_TRUE(c.policy.background);
      EXPECT_TRUE(c.policy.preemptible);
    }
    if (c.name == "critical") {
      EXPECT_DOUBLE_EQ(c.policy.min_share, 0.15);
    }
    if (c.name == "chat") {
      EXPECT_EQ(c.max_tokens_cap, 4096);  // the file's own value wins
    }
  }
  // A class of its own starts from the plain defaults.
  auto own = parse_config(R"(
classes: [{name: gold}]
models: [{name: m1, backends: [{url: "http://127.0.0.1:8000"}]}]
)");
  ASSERT_TRUE(own) << ::testing::PrintToString(own.error());
  EXPECT_TRUE(own->inherited_classes.empty());
  EXPECT_DOUBLE_EQ(own->classes[0].policy.min_share, 0);
}

}  // namespace
}  // namespace arbiter
