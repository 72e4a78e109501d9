// prices: per-model prices read, checked against the models, attached to
// every pool of their model and printed back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gateway/config_print.hpp"
#include "gateway/config_yaml.hpp"

namespace arbiter::config_prices_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Model m1 in two pools (completion apart), m2 in one.
constexpr const char* kModels = R"(
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:8000", classes: [completion]}
      - {url: "http://127.0.0.1:8001"}
  - name: m2
    backends: [{url: "http://127.0.0.1:8002"}]
)";

std::vector<std::string> errors_of(const std::string& prices) {
  auto c = parse_config(std::string(kModels) + prices);
  return c ? std::vector<std::string>{} : c.error();
}

TEST(ConfigPrices, EveryPoolOfAPricedModelCarriesItsPrice) {
  auto c = parse_config(std::string(kModels) + R"(
prices:
  - {model: m1, input_per_million: 0.5, output_per_million: 1.5, cached_input_per_million: 0.1, per_gpu_second: 0.002}
)");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  ASSERT_EQ(c->models.size(), 3u);
  for (const ModelConfig& m : c->models) {
    SCOPED_TRACE(m.pool_name());
    if (m.name == "m2") {
      EXPECT_FALSE(m.price.has_value());
      continue;
    }
    ASSERT_TRUE(m.price.has_value());
    EXPECT_EQ(m.price->model, "m1");
    EXPECT_DOUBLE_EQ(m.price->input_per_million, 0.5);
    EXPECT_DOUBLE_EQ(m.price->output_per_million, 1.5);
    EXPECT_DOUBLE_EQ(m.price->cached_price(), 0.1);
    EXPECT_DOUBLE_EQ(m.price->per_gpu_second, 0.002);
  }
}

TEST(ConfigPrices, UnsetPricesAreZeroAndCachedInputCostsTheInputPrice) {
  auto c = parse_config(std::string(kModels) + "prices: [{model: m2, input_per_million: 3}]\n");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  const ModelPrice& p = *c->models.back().price;
  EXPECT_DOUBLE_EQ(p.output_per_million, 0);
  EXPECT_DOUBLE_EQ(p.per_gpu_second, 0);
  EXPECT_FALSE(p.cached_input_per_million.has_value());
  EXPECT_DOUBLE_EQ(p.cached_price(), 3);
}

TEST(ConfigPrices, BadEntriesAreErrorsWithTheirPaths) {
  EXPECT_THAT(errors_of("prices: [{model: m3, input_per_million: 1}]\n"),
              ElementsAre("prices[0].model: names no model: 'm3'"));
  EXPECT_THAT(errors_of("prices: [{model: m1, input_per_million: 1}, {model: m1, output_per_million: 2}]\n"),
              ElementsAre("prices[1].model: model 'm1' is priced twice"));
  EXPECT_THAT(errors_of("prices: [{model: m1, output_per_million: -1}]\n"),
              ElementsAre(HasSubstr("prices[0].output_per_million: must be between 0 and")));
  EXPECT_THAT(errors_of("prices: [{model: m1, cached_input_per_million: -0.5}]\n"),
              ElementsAre(HasSubstr("prices[0].cached_input_per_million: must be between 0 and")));
  EXPECT_THAT(errors_of("prices: [{model: m1, per_gpu_second: cheap}]\n"),
              ElementsAre(HasSubstr("prices[0].per_gpu_second:")));
  EXPECT_THAT(errors_of("prices: [{model: m1}]\n"), ElementsAre(HasSubstr("prices[0]: sets no price")));
  EXPECT_THAT(errors_of("prices: [{input_per_million: 1}]\n"), ElementsAre(HasSubstr("prices[0].model:")));
  EXPECT_THAT(errors_of("prices: [{model: m1, input_per_milion: 1}]\n"),
              ElementsAre("prices[0].input_per_milion: unknown key", HasSubstr("prices[0]: sets no price")));
  EXPECT_THAT(errors_of("prices: {model: m1}\n"), ElementsAre(HasSubstr("prices:")));
}

TEST(ConfigPrices, PrintedOncePerModelAndReadBack) {
  auto c = parse_config(std::string(kModels) + R"(
prices:
  - {model: m1, input_per_million: 0.5, output_per_million: 1.5, cached_input_per_million: 0.1}
  - {model: m2, per_gpu_second: 0.25}
)");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  const std::string printed = config_to_yaml(*c);
  EXPECT_THAT(printed, HasSubstr("prices:\n"
                                 "  - {model: \"m1\", input_per_million: 0.5, output_per_million: 1.5, "
                                 "cached_input_per_million: 0.1, per_gpu_second: 0}\n"
                                 "  - {model: \"m2\", input_per_million: 0, output_per_million: 0, per_gpu_second: 0.25}\n"));
  auto again = parse_config(printed);
  ASSERT_TRUE(again) << ::testing::PrintToString(again.error());
  EXPECT_EQ(config_to_yaml(*again), printed);
  EXPECT_EQ(config_to_yaml(*parse_config(kModels)).find("prices"), std::string::npos);  // none priced: none printed
}

}  // namespace
}  // namespace arbiter::config_prices_test
