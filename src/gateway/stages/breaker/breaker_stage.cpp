#include "gateway/stages/breaker/breaker_stage.hpp"

#include <fmt/format.h>


namespace arbiter {

Verdict BreakerStage::admit(RequestContext& ctx) {
  const Runtime& runtime = *ctx.runtime;
  // The model's breaker: a LoRA adapter's requests are its base model's.
  const auto index = breakers_.index(runtime.config.models[ctx.pool()].name);
  if (!runtime.config.model_breaker.enabled || !index) return Verdict::go();
  const resilience::BreakerRoute route = breakers_.route(*index, sched::Clock::now());
  const std::string& model = breakers_.model(*index);
  if (route.target == resilience::BreakerTarget::kRefuse) {
    breakers_.metrics().rerouted.with({model, "isolated"}).inc();
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(route.retry_after);
    return Verdict::refuse(ApiError{ErrorCode::kModelIsolated,
                                    fmt::format("the model '{}' is failing and isolated by its breaker; retry after "
                                                "{:.1f} s",
                                                model, std::chrono::duration<double>(wait).count()),
                                    std::nullopt, wait});
  }
  ctx.breaker = route;
  ctx.breaker_model = *index;
  if (route.target == resilience::BreakerTarget::kPrimary) return Verdict::go();
  // The config checked both name models it serves.
  const ModelConfig& requested = runtime.config.models[ctx.pool()];
  const std::string& target = route.target == resilience::BreakerTarget::kDegraded ? requested.degraded
                                                                                   : requested.fallback;
  const auto it = runtime.pool_index.find(target);
  if (it == runtime.pool_index.end()) return Verdict::go();
  breakers_.metrics().rerouted.with({model, target}).inc();
  rewrite_model(ctx.parsed, target);
  ctx.route_to(runtime.config, it->second, ctx.cls);
  ctx.prefix.clear();  // hashed for the requested model's pool; a cold start for the other is fine
  ctx.response_headers.emplace_back("x-arbiter-model", target);
  ctx.response_headers.emplace_back("x-arbiter-breaker",
                                    std::string(resilience::stage_name(route.target == resilience::BreakerTarget::kDegraded
                                                                           ? resilience::BreakerStage::kDegraded
                                                                           : resilience::BreakerStage::kFallback)));
  return Verdict::go();
}

}  // namespace arbiter
