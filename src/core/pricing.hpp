// What a request costs (config: prices; docs/usage.md): its tokens at the
// model's prices per million, and the time it held an engine at the price
// per GPU-second. Currency-neutral: whatever unit the prices are in.
#pragma once

#include <optional>
#include <string>

#include "core/resume.hpp"

namespace arbiter {

struct ModelPrice {
  std::string model;
  double input_per_million = 0;   // prompt tokens the engine computed
  double output_per_million = 0;  // completion tokens
  // Prompt tokens served from the engine's prefix cache; nullopt: the
  // input price.
  std::optional<double> cached_input_per_million;
  double per_gpu_second = 0;      // each second the request held an engine

  double cached_price() const { return cached_input_per_million.value_or(input_per_million); }
};

// usage.prompt_tokens - cached_tokens at the input price, cached_tokens at
// the cached price, completion_tokens at the output price, and
// `engine_seconds` at the price per GPU-second.
double request_cost(const ModelPrice& price, const Usage& usage, double engine_seconds);

}  // namespace arbiter
