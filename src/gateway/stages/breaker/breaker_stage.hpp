// Admission stage (after route): the requested model's breaker
// (ModelBreakers, docs/resilience.md) decides where the request goes. Closed
// or a half-open trial: the model itself. Degraded: its `degraded` variant;
// fallback: its `fallback` model (the body's `model` rewritten, the pool
// chosen again for the class, `x-arbiter-model` naming what serves it).
// Isolated: 503 with Retry-After until the next half-open trial.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "gateway/gateway_metrics.hpp"
#include "gateway/pipeline/stage.hpp"
#include "gateway/stages/breaker/model_breakers.hpp"

namespace arbiter {

class BreakerStage final : public AdmissionStage {
 public:
  BreakerStage(const Config& config, ModelBreakers& breakers,
               const std::unordered_map<std::string, std::vector<std::size_t>>& pool_index, GatewayMetrics& metrics)
      : config_(config), breakers_(breakers), pool_index_(pool_index), metrics_(metrics) {}
  std::string_view name() const override { return "breaker"; }
  Verdict admit(RequestContext& ctx) override;

 private:
  const Config& config_;
  ModelBreakers& breakers_;
  const std::unordered_map<std::string, std::vector<std::size_t>>& pool_index_;
  GatewayMetrics& metrics_;
};

}  // namespace arbiter
