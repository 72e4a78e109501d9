#include "core/classifier.hpp"

#include <gtest/gtest.h>

namespace arbiter {
namespace {

class ClassifierTest : public ::testing::Test {
 protected:
  std::vector<ClassConfig> classes_ = default_classes();
  TenantConfig restricted_{.name = "ide", .team = "ide", .key_sha256 = {}, .allowed_classes = {"completion", "chat"}};
  Classifier classifier_{classes_, "chat"};

  std::string name_of(const ClassifyInput& in) {
    auto r = classifier_.classify(in);
    return r ? classes_[*r].name : "error " + std::to_string(r.error().status());
  }
};

TEST_F(ClassifierTest, RouteRulesSplitCompletionAndChat) {
  EXPECT_EQ(name_of({.route = Route::kCompletions, .model = "m"}), "completion");
  EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m"}), "chat");
}

TEST_F(ClassifierTest, HeaderClaimsAreHonouredOnlyWhenAllowed) {
  EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m", .claimed = "batch"}), "batch");
  EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m", .tenant = &restricted_,
                     .claimed = "critical"}),
            "error 403");
  EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m", .tenant = &restricted_,
                     .claimed = "completion"}),
            "completion");
  EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m", .claimed = "platinum"}),
            "error 400");
}

TEST_F(ClassifierTest, AClassThatOutranksTheDefaultMustBeGrantedToBeClaimed) {
  // critical (priority 0, min_share 0.15) and completion (priority 1) outrank
  // chat (priority 2); batch does not. Unlisted tenants and anonymous
  // clients may claim only what does not outrank the default.
  const TenantConfig unlisted{.name = "team", .team = "team", .key_sha256 = {}, .allowed_classes = {}};
  const TenantConfig granted{.name = "ops", .team = "ops", .key_sha256 = {}, .allowed_classes = {"critical"}};
  for (const TenantConfig* who : {static_cast<const TenantConfig*>(nullptr), &unlisted}) {
    EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m", .tenant = who, .claimed = "critical"}),
              "error 403");
    EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m", .tenant = who, .claimed = "completion"}),
              "error 403");
    EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m", .tenant = who, .claimed = "batch"}), "batch");
    EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m", .tenant = who, .claimed = "chat"}), "chat");
    // Rules still route them: a completion by route is a completion.
    EXPECT_EQ(name_of({.route = Route::kCompletions, .model = "m", .tenant = who}), "completion");
  }
  EXPECT_EQ(name_of({.route = Route::kChatCompletions, .model = "m", .tenant = &granted, .claimed = "critical"}),
            "critical");
  const auto refused = classifier_.classify({.route = Route::kChatCompletions, .model = "m", .claimed = "critical"});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("outranks the default class 'chat'"), std::string::npos)
      << refused.error().message;
}

TEST_F(ClassifierTest, RulesMatchOnModelTenantAndMaxTokens) {
  TenantConfig risk{.name = "risk", .team = "risk", .key_sha256 = {}, .allowed_classes = {}};
  std::vector<ClassConfig> classes = {
      {.name = "critical", .match = ClassMatch{.tenants = {"risk"}, .max_tokens_at_most = 64}, .max_tokens_cap = {}},
      {.name = "long", .match = ClassMatch{.models = {"big"}, .max_tokens_at_least = 1000}, .max_tokens_cap = 4096},
      {.name = "chat", .match = std::nullopt, .max_tokens_cap = {}},
  };
  Classifier c(classes, "chat");
  auto cls = [&](ClassifyInput in) { return classes[*c.classify(in)].name; };
  EXPECT_EQ(cls({.model = "m", .tenant = &risk, .max_tokens = 32}), "critical");
  EXPECT_EQ(cls({.model = "m", .tenant = &risk, .max_tokens = 65}), "chat");
  // No max_tokens means "up to the context length": no upper bound holds.
  EXPECT_EQ(cls({.model = "m", .tenant = &risk}), "chat");
  EXPECT_EQ(cls({.model = "m", .max_tokens = 32}), "chat");  // anonymous is not tenant risk
  EXPECT_EQ(cls({.model = "big", .max_tokens = 2000}), "long");
  EXPECT_EQ(cls({.model = "big"}), "long");
  EXPECT_EQ(cls({.model = "big", .max_tokens = 999}), "chat");
}

TEST_F(ClassifierTest, RestrictedTenantSkipsRulesItMayNotUse) {
  std::vector<ClassConfig> classes = {
      {.name = "gold", .match = ClassMatch{}, .max_tokens_cap = {}},  // matches everything
      {.name = "chat", .match = std::nullopt, .max_tokens_cap = {}},
  };
  Classifier c(classes, "chat");
  TenantConfig t{.name = "t", .team = "t", .key_sha256 = {}, .allowed_classes = {"chat"}};
  EXPECT_EQ(classes[*c.classify({.model = "m", .tenant = &t})].name, "chat");
  TenantConfig none{.name = "n", .team = "n", .key_sha256 = {}, .allowed_classes = {"gold"}};
  Classifier only_chat_default(classes, "chat");
  EXPECT_EQ(classes[*only_chat_default.classify({.model = "m", .tenant = &none})].name, "gold");
  std::vector<ClassConfig> header_only = {{.name = "chat", .match = std::nullopt, .max_tokens_cap = {}},
                                          {.name = "x", .match = std::nullopt, .max_tokens_cap = {}}};
  Classifier strict(header_only, "chat");
  TenantConfig x_only{.name = "x", .team = "x", .key_sha256 = {}, .allowed_classes = {"x"}};
  auto r = strict.classify({.model = "m", .tenant = &x_only});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().status(), 403);
}

}  // namespace
}  // namespace arbiter
