#include "gateway/stages/degrade/degrade_stage.hpp"

#include <fmt/format.h>

#include <random>

namespace arbiter {
namespace {

double thread_uniform() {
  thread_local std::minstd_rand rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0, 1)(rng);
}

}  // namespace

DegradeStage::DegradeStage(OverloadControl& control, std::function<double()> uniform)
    : control_(control), uniform_(uniform ? std::move(uniform) : thread_uniform) {}

bool DegradeStage::to_variant(RequestContext& ctx) const {
  const Runtime& runtime = *ctx.runtime;
  if (ctx.breaker && ctx.breaker->target != resilience::BreakerTarget::kPrimary) return false;  // rerouted already
  const std::string& target = runtime.config.models[ctx.pool()].degraded;
  if (target.empty()) return false;
  const auto it = runtime.pool_index.find(target);
  if (it == runtime.pool_index.end()) return false;
  rewrite_model(ctx.parsed, target);
  ctx.route_to(runtime.config, it->second, ctx.cls);
  ctx.prefix.clear();  // hashed for the requested model's pool
  ctx.response_headers.emplace_back("x-arbiter-model", target);
  return true;
}

Verdict DegradeStage::admit(RequestContext& ctx) {
  const overload::DegradationConfig& settings = ctx.runtime->config.degradation;
  if (!settings.enabled) return Verdict::go();
  const std::size_t pool = ctx.pool();
  const overload::Stage stage = control_.stage(pool);
  if (stage == overload::Stage::kNormal) return Verdict::go();
  const overload::ClassActions& actions = control_.actions(ctx.cls);
  if (actions.protect) return Verdict::go();
  const double load = control_.load(pool);
  const double weight = ctx.runtime->config.classes[ctx.cls].policy.weight;
  const double draw = stage == overload::Stage::kShedding ? uniform_() : 1.0;
  const overload::Decision d =
      overload::decide(stage, actions, load, weight, settings.shed_at, settings.max_shed, draw);
  const std::string pool_name = ctx.runtime->config.models[pool].pool_name();
  const auto count = [&](std::string_view action) {
    control_.metrics().degraded.with({pool_name, ctx.rec.cls, std::string(action)}).inc();
  };
  const std::string_view stage_label = overload::stage_name(stage);
  if (d.shed) {
    count("shed");
    ctx.rec.degraded = fmt::format("{}/shed", stage_label);
    ctx.response_headers.emplace_back("x-arbiter-degraded", ctx.rec.degraded);
    const auto wait = control_.retry_after(pool, ctx.cls);
    return Verdict::refuse(ApiError{ErrorCode::kOverloaded,
                                    fmt::format("the '{}' pool is overloaded (load {:.2f}) and sheds '{}' requests; "
                                                "retry after {:.1f} s",
                                                pool_name, load, ctx.rec.cls,
                                                std::chrono::duration<double>(wait).count()),
                                    std::nullopt, wait});
  }
  std::string applied;
  const auto note = [&](std::string_view action) {
    count(action);
    applied += fmt::format("{}{}/{}", applied.empty() ? "" : ", ", stage_label, action);
  };
  if (d.cap && apply_max_tokens_cap(ctx.parsed, *d.cap)) {
    note("cap");
    ctx.response_headers.emplace_back("x-arbiter-max-tokens-capped", std::to_string(*d.cap));
  }
  if (d.variant && to_variant(ctx)) note("variant");
  if (!applied.empty()) {
    ctx.response_headers.emplace_back("x-arbiter-degraded", applied);
    ctx.rec.degraded = std::move(applied);
  }
  return Verdict::go();
}

}  // namespace arbiter
