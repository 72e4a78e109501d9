#include "gateway/stages/parse/parse_stage.hpp"

namespace arbiter {

Verdict ParseStage::admit(RequestContext& ctx) {
  auto parsed = parse_request(ctx.route, std::move(ctx.req.body()), max_json_depth_);
  if (!parsed) return Verdict::refuse(std::move(parsed.error()));
  ctx.parsed = std::move(*parsed);
  ctx.rec.stream = ctx.parsed.info.stream;
  return Verdict::go();
}

}  // namespace arbiter
