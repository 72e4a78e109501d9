// Admission stage 4: what the class allows. A max_tokens above the class's
// cap is rewritten in place (counted in arbiter_max_tokens_capped_total,
// and said in the answer's x-arbiter-max-tokens-capped header);
// work the scheduler may preempt gets its resume method (how a preempted
// run continues from its checkpoint), or none when it cannot be resumed.
#pragma once

#include "gateway/gateway_metrics.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class CapsStage final : public DeclaredStage<CapsStage> {
 public:
  // The class settings come from the request's config snapshot (ctx.runtime).
  CapsStage(const std::vector<std::unique_ptr<ModelPool>>& pools, GatewayMetrics& metrics)
      : pools_(pools), metrics_(metrics) {}
  static constexpr std::string_view kName = "caps";
  static constexpr Phase kPhase = Phase::kAdmit;
  Verdict admit(RequestContext& ctx) override;

 private:
  const std::vector<std::unique_ptr<ModelPool>>& pools_;
  GatewayMetrics& metrics_;
};

}  // namespace arbiter
