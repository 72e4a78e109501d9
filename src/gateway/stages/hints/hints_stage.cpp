#include "gateway/stages/hints/hints_stage.hpp"

#include "core/client_hints.hpp"

namespace arbiter {

Verdict HintsStage::admit(RequestContext& ctx) {
  auto hints = parse_client_hints(ctx.req.field(kPriorityHeader), ctx.req.field(kTtftHeader));
  if (!hints) {
    const bool priority = hints.error().param == kPriorityHeader;
    metrics_.client_hints.with({priority ? "priority" : "ttft", "invalid"}).inc();
    return Verdict::refuse(std::move(hints.error()));
  }
  ctx.hints = *hints;
  return Verdict::go();
}

}  // namespace arbiter
