// Admission stage (after route): the requested model's breaker
// (ModelBreakers, docs/resilience.md) decides where the request goes. Closed
// or a half-open trial: the model itself. Degraded: its `degraded` variant;
// fallback: its `fallback` model (the body's `model` rewritten, the pool
// chosen again for the class, `x-arbiter-model` naming what serves it).
// Isolated: 503 with Retry-After until the next half-open trial. The config
// and the pools it reroutes to are the request's Runtime's.
#pragma once

#include "gateway/pipeline/stage.hpp"
#include "gateway/stages/breaker/model_breakers.hpp"

namespace arbiter {

class BreakerStage final : public DeclaredStage<BreakerStage> {
 public:
  explicit BreakerStage(ModelBreakers& breakers) : breakers_(breakers) {}
  static constexpr std::string_view kName = "breaker";
  static constexpr Phase kPhase = Phase::kProtect;
  Verdict admit(RequestContext& ctx) override;

 private:
  ModelBreakers& breakers_;
};

}  // namespace arbiter
