#include "gateway/stages/route/route_stage.hpp"

#include <algorithm>

#include "core/prefix_blocks.hpp"

namespace arbiter {

namespace {

// Whether a backend of pool `pool` serves adapter number `adapter`.
bool pool_serves(const Config& config, std::size_t pool, uint16_t adapter) {
  const std::string& name = config.adapters[adapter - 1].name;
  return std::ranges::any_of(config.models[pool].backends,
                             [&](const BackendConfig& b) { return std::ranges::count(b.adapters, name) > 0; });
}

}  // namespace

Verdict RouteStage::admit(RequestContext& ctx) {
  const RequestInfo& info = ctx.parsed.info;
  const Runtime& runtime = *ctx.runtime;
  const std::vector<std::size_t>* pools = nullptr;
  uint16_t adapter = 0;
  if (auto it = runtime.pool_index.find(info.model); it != runtime.pool_index.end()) {
    pools = &it->second;
  } else if (auto a = runtime.adapters.find(info.model); a != runtime.adapters.end()) {
    pools = a->second.pools;  // a LoRA adapter: its base model's pools, classes and quotas
    adapter = a->second.number;
  } else {
    return Verdict::refuse(
        ApiError{ErrorCode::kModelNotFound, "the model '" + info.model + "' does not exist", "model"});
  }
  ctx.rec.model = info.model;
  const std::string& base = runtime.config.models[pools->front()].name;
  const std::optional<std::string_view> claimed = ctx.req.field("x-arbiter-class");
  auto cls = runtime.classifier.classify({.route = ctx.route,
                                          .model = base,
                                          .tenant = ctx.tenant,
                                          .claimed = claimed,
                                          .max_tokens = info.max_tokens});
  if (!cls) return Verdict::refuse(std::move(cls.error()));
  ctx.route_to(runtime.config, *pools, *cls);
  ctx.adapter = adapter;
  if (adapter != 0 && !pool_serves(runtime.config, ctx.pool(), adapter)) {
    return Verdict::refuse(ApiError{ErrorCode::kModelNotFound,
                                    "the model '" + info.model + "' (a LoRA adapter of '" + base +
                                        "') has no backend for class '" + runtime.config.classes[*cls].name + "'",
                                    "model"});
  }
  // Every engine of the pool must serve it: the scheduler may place the
  // request on any of them, and one without it would answer 404 mid-way.
  if (info.route == Route::kResponses) {
    const std::vector<BackendConfig>& backends = runtime.config.models[ctx.pool()].backends;
    if (const auto lacking = std::ranges::find_if_not(backends, &BackendConfig::responses); lacking != backends.end()) {
      return Verdict::refuse(ApiError{ErrorCode::kModelNotFound,
                                      "the model '" + info.model + "' is not served on /v1/responses by its engines" +
                                          " (backend '" + lacking->name + "' does not: backends[].responses;" +
                                          " use /v1/chat/completions)",
                                      "model"});
    }
  }
  // Hashed before a cap edits the text: the prompt's offset is the scan's.
  // An adapter's prompts are cached apart from the base model's (vLLM keys
  // its prefix cache by adapter too): its number salts the hashes.
  if (const std::size_t at = info.prompt_at; at < ctx.parsed.text.size() && pools_[ctx.pool()]->routes_by_prefix()) {
    prefix_blocks(std::string_view(ctx.parsed.text).substr(at), adapter, ctx.prefix);
  }
  return Verdict::go();
}

}  // namespace arbiter
