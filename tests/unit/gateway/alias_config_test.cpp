// The aliases section: read with every error at its key path, printed by
// --print-config and read back the same.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "gateway/config_print.hpp"
#include "gateway/config_yaml.hpp"

namespace arbiter {
namespace {

const std::string kModels =
    "models:\n"
    "  - {name: old, backends: [{url: \"http://127.0.0.1:9001\"}]}\n"
    "  - {name: new, backends: [{url: \"http://127.0.0.1:9002\"}]}\n";

TEST(AliasConfig, ReadsTargetsStickinessAndCanary) {
  auto config = parse_config(kModels +
                             "aliases:\n"
                             "  - name: chat\n"
                             "    targets: [{model: old, weight: 95}, {model: new, weight: 5}]\n"
                             "    sticky: tenant\n"
                             "    canary: {target: new, margin: 0.2, window_s: 30, min_requests: 20, steps: [5, 50, 100],"
                             " step_after_s: 60}\n"
                             "  - {name: mirror, targets: [{model: old}], shadow: {model: new, share: 0.25, max_concurrency: 8,"
                             " timeout_s: 30}}\n");
  ASSERT_TRUE(config) << ::testing::PrintToString(config.error());
  ASSERT_EQ(config->aliases.size(), 2u);
  ASSERT_TRUE(config->aliases[1].shadow);
  EXPECT_EQ(config->aliases[1].shadow->model, "new");
  EXPECT_EQ(config->aliases[1].shadow->share, 0.25);
  EXPECT_EQ(config->aliases[1].shadow->max_concurrency, 8u);
  EXPECT_EQ(config->aliases[1].shadow->timeout, std::chrono::seconds(30));
  const rollout::AliasConfig& a = config->aliases[0];
  EXPECT_EQ(a.name, "chat");
  ASSERT_EQ(a.targets.size(), 2u);
  EXPECT_EQ(a.targets[1].model, "new");
  EXPECT_EQ(a.targets[1].weight, 5);
  EXPECT_EQ(a.sticky, rollout::Sticky::kTenant);
  ASSERT_TRUE(a.canary);
  EXPECT_EQ(a.canary->margin, 0.2);
  EXPECT_EQ(a.canary->window, std::chrono::seconds(30));
  EXPECT_EQ(a.canary->min_requests, 20u);
  EXPECT_EQ(a.canary->steps, (std::vector<double>{5, 50, 100}));
  EXPECT_EQ(a.canary->step_after, std::chrono::seconds(60));

  // --print-config writes it; read back, it is the same alias.
  auto again = parse_config(config_to_yaml(*config));
  ASSERT_TRUE(again) << ::testing::PrintToString(again.error()) << config_to_yaml(*config);
  EXPECT_EQ(again->aliases, config->aliases);
}

TEST(AliasConfig, EachMistakeIsNamedAtItsPath) {
  using ::testing::Contains;
  using ::testing::HasSubstr;
  auto errors = [](const std::string& aliases) {
    auto config = parse_config(kModels + "aliases:\n" + aliases);
    EXPECT_FALSE(config) << aliases;
    return config ? ConfigErrors{} : config.error();
  };
  EXPECT_THAT(errors("  - {name: old, targets: [{model: new}]}\n"), Contains(HasSubstr("aliases[0].name")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: nope}]}\n"), Contains(HasSubstr("aliases[0].targets[0].model")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old, weight: 0}]}\n"), Contains(HasSubstr("aliases[0].targets")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old}, {model: old}]}\n"),
              Contains(HasSubstr("aliases[0].targets[1].model")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old}], canary: {target: new}}\n"),
              Contains(HasSubstr("aliases[0].canary.target")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old, weight: 0}, {model: new}], canary: {target: new}}\n"),
              Contains(HasSubstr("aliases[0].canary")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old}, {model: new}], canary: {target: new, steps: [5, 5]}}\n"),
              Contains(HasSubstr("aliases[0].canary.steps[1]")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old}], sticky: user}\n"), Contains(HasSubstr("aliases[0].sticky")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old}]}\n  - {name: a, targets: [{model: new}]}\n"),
              Contains(HasSubstr("aliases")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old}], shadow: {model: old}}\n"),
              Contains(HasSubstr("aliases[0].shadow.model")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old}], shadow: {model: nope}}\n"),
              Contains(HasSubstr("aliases[0].shadow.model")));
  EXPECT_THAT(errors("  - {name: a, targets: [{model: old}], shadow: {model: new, share: 0}}\n"),
              Contains(HasSubstr("aliases[0].shadow.share")));
}

}  // namespace
}  // namespace arbiter
