#include "gateway/stages/route/route_stage.hpp"

#include "core/prefix_blocks.hpp"

namespace arbiter {

Verdict RouteStage::admit(RequestContext& ctx) {
  const RequestInfo& info = ctx.parsed.info;
  const Runtime& runtime = *ctx.runtime;
  auto it = runtime.pool_index.find(info.model);
  if (it == runtime.pool_index.end()) {
    return Verdict::refuse(
        ApiError{ErrorCode::kModelNotFound, "the model '" + info.model + "' does not exist", "model", {}});
  }
  ctx.rec.model = info.model;
  const std::optional<std::string_view> claimed = ctx.req.field("x-arbiter-class");
  auto cls = runtime.classifier.classify({.route = ctx.route,
                                          .model = info.model,
                                          .tenant = ctx.tenant,
                                          .claimed = claimed,
                                          .max_tokens = info.max_tokens});
  if (!cls) return Verdict::refuse(std::move(cls.error()));
  ctx.route_to(runtime.config, it->second, *cls);
  // Hashed before a cap edits the text: the prompt's offset is the scan's.
  if (const std::size_t at = info.prompt_at; at < ctx.parsed.text.size() && pools_[ctx.pool()]->routes_by_prefix()) {
    prefix_blocks(std::string_view(ctx.parsed.text).substr(at), 0, ctx.prefix);
  }
  return Verdict::go();
}

}  // namespace arbiter
