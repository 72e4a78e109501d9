// Admission stage: client hints, the request's own priority (x-priority)
// and TTFT deadline (x-slo-ttft-ms), read into ctx.hints as sent
// (core/client_hints.hpp). A malformed value is a 400 naming its header,
// counted in arbiter_client_hints_total{outcome="invalid"}. The tenant's
// bounds apply later, in DispatchHandler, once the class is final.
#pragma once

#include "gateway/gateway_metrics.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class HintsStage final : public DeclaredStage<HintsStage> {
 public:
  explicit HintsStage(GatewayMetrics& metrics) : metrics_(metrics) {}
  static constexpr std::string_view kName = "hints";
  static constexpr Phase kPhase = Phase::kRoute;
  Verdict admit(RequestContext& ctx) override;

 private:
  GatewayMetrics& metrics_;
};

}  // namespace arbiter
