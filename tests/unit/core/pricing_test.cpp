// A request's cost: uncached prompt, cached prompt and completion tokens at
// their prices per million, engine time per GPU-second.
#include "core/pricing.hpp"

#include <gtest/gtest.h>

namespace arbiter {
namespace {

TEST(Pricing, TokensAtTheirPricesPerMillion) {
  const ModelPrice price{.model = "m1", .input_per_million = 2, .output_per_million = 8,
                         .cached_input_per_million = 0.5, .per_gpu_second = 0};
  // 1000 prompt tokens of which 400 cached, 250 completion:
  // 600 x 2 + 400 x 0.5 + 250 x 8 = 1200 + 200 + 2000 = 3400 per million.
  const Usage u{.prompt_tokens = 1000, .completion_tokens = 250, .cached_tokens = 400};
  EXPECT_NEAR(request_cost(price, u, 3.0), 0.0034, 1e-12);
}

TEST(Pricing, CachedTokensCostTheInputPriceUnlessPricedApart) {
  const ModelPrice price{.model = "m1", .input_per_million = 3, .output_per_million = 0};
  const Usage u{.prompt_tokens = 1'000'000, .completion_tokens = 0, .cached_tokens = 600'000};
  EXPECT_NEAR(request_cost(price, u, 0), 3, 1e-12);
}

TEST(Pricing, EngineTimeAtThePricePerGpuSecond) {
  const ModelPrice price{.model = "m1", .input_per_million = 1, .output_per_million = 1, .per_gpu_second = 0.002};
  // 2.5 s held: 0.005, plus 10 tokens at 1 per million.
  EXPECT_NEAR(request_cost(price, Usage{.prompt_tokens = 4, .completion_tokens = 6}, 2.5), 0.005 + 1e-5, 1e-12);
  // No usage reported: the time alone.
  EXPECT_NEAR(request_cost(price, Usage{}, 2.5), 0.005, 1e-12);
}

}  // namespace
}  // namespace arbiter
