#include "core/pricing.hpp"

namespace arbiter {

double request_cost(const ModelPrice& price, const Usage& usage, double engine_seconds) {
  const auto tokens = [](int64_t n, double per_million) { return static_cast<double>(n) * per_million / 1e6; };
  return tokens(usage.prompt_tokens - usage.cached_tokens, price.input_per_million) +
         tokens(usage.cached_tokens, price.cached_price()) +
         tokens(usage.completion_tokens, price.output_per_million) + engine_seconds * price.per_gpu_second;
}

}  // namespace arbiter
