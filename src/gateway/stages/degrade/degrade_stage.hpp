// Protect-phase stage (after the breaker): what the request's pool's
// degradation stage (OverloadControl) does to its class (docs/overload.md).
// Elevated: max_tokens capped; high: the model's `degraded` variant serves
// it (the body's model rewritten, the pool chosen again, `x-arbiter-model`
// naming it), unless the breaker already rerouted it; shedding: refused 429
// `overloaded` with a probability that rises with L and falls with the
// class's weight, Retry-After the class's predicted queue drain. Each change
// is said in `x-arbiter-degraded: <stage>/<action>` (a list), the access
// log's `degraded` field and arbiter_degraded_requests_total. A protected
// class passes untouched; so does everything while degradation.enabled is
// false.
#pragma once

#include <functional>

#include "gateway/pipeline/stage.hpp"
#include "gateway/stages/degrade/overload_control.hpp"

namespace arbiter {

class DegradeStage final : public DeclaredStage<DegradeStage> {
 public:
  // `uniform` draws in [0, 1) for shedding; default: a per-thread generator.
  explicit DegradeStage(OverloadControl& control, std::function<double()> uniform = {});
  static constexpr std::string_view kName = "degrade";
  static constexpr Phase kPhase = Phase::kProtect;
  Verdict admit(RequestContext& ctx) override;

 private:
  // Reroutes to the model's degraded variant; false when it has none served here.
  bool to_variant(RequestContext& ctx) const;

  OverloadControl& control_;
  std::function<double()> uniform_;
};

}  // namespace arbiter
