#include "gateway/stages/auth/auth_stage.hpp"

namespace arbiter {

Verdict AuthStage::admit(RequestContext& ctx) {
  auto tenant = ctx.runtime->tenants.authenticate(ctx.req["authorization"], ctx.conn.peer_names());
  if (!tenant) return Verdict::refuse(std::move(tenant.error()));
  ctx.tenant = *tenant;
  if (ctx.tenant) {
    ctx.rec.tenant = ctx.tenant->name;
    ctx.rec.team = ctx.tenant->team;
  }
  return Verdict::go();
}

}  // namespace arbiter
