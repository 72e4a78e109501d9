// Admission stage (route phase, before RouteStage): a request for a model
// alias goes to one of its targets (docs/rollouts.md): a weighted draw from
// its sticky key's hash (x-session-id, else the body's `user`, else the
// tenant; or the tenant; or none), over the weights the rollout has now.
// The body's model becomes the target's, the answer says which
// (x-arbiter-target), and the request keeps the alias for RolloutObserver.
// A request of the alias's shadow share (by its id's hash), while the
// shadow has room, keeps a copy of its body for the shadow model and of
// its real answer (ShadowCapture).
#pragma once

#include <string>

#include "gateway/gateway_metrics.hpp"
#include "gateway/pipeline/stage.hpp"
#include "gateway/stages/rollout/rollout_book.hpp"

namespace arbiter {

// The alias a request came in by and the target it was sent to.
struct AliasRoute {
  std::string alias;
  std::string target;
};

class AliasStage final : public DeclaredStage<AliasStage> {
 public:
  AliasStage(RolloutBook& book, GatewayMetrics& metrics);
  static constexpr std::string_view kName = "alias";
  static constexpr Phase kPhase = Phase::kRoute;
  Verdict admit(RequestContext& ctx) override;

 private:
  RolloutBook& book_;
  metrics::Family<metrics::Counter>& requests_;
};

// Completion observer: the outcome of a request an alias routed, for its
// canary's judge (errors, time to first token and inter-token latency of
// streamed answers, measured from dispatch); and a mirrored request's
// shadow, launched once its real answer is done (shadow_run.hpp).
class RolloutObserver final : public CompletionObserver {
 public:
  explicit RolloutObserver(RolloutBook& book) : book_(book) {}
  void on_complete(const RequestContext& ctx) override;

 private:
  RolloutBook& book_;
};

}  // namespace arbiter
