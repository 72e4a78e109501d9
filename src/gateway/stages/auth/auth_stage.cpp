#include "gateway/stages/auth/auth_stage.hpp"

namespace arbiter {

Verdict AuthStage::admit(RequestContext& ctx) {
  // A gateway-internal client (a batch line) acts for the tenant it names.
  const std::string_view acting = ctx.conn.acting_tenant();
  auto tenant = acting.empty() ? ctx.runtime->tenants.authenticate(ctx.req["authorization"], ctx.conn.peer_names())
                               : ctx.runtime->tenants.acting_as(acting);
  if (!tenant) return Verdict::refuse(std::move(tenant.error()));
  ctx.tenant = *tenant;
  if (ctx.tenant) {
    ctx.rec.tenant = ctx.tenant->name;
    ctx.rec.team = ctx.tenant->team;
  }
  return Verdict::go();
}

}  // namespace arbiter
