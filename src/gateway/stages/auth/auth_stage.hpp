// Admission stage 1: who is calling. The API key (Authorization: Bearer)
// names a tenant, else the connection's verified client certificate
// (tenants[].client_cert_names); with auth off anyone else is anonymous.
// Runs before anything in the body is parsed. The tenants are the
// request's Runtime's.
#pragma once

#include "core/tenants.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class AuthStage final : public DeclaredStage<AuthStage> {
 public:
  static constexpr std::string_view kName = "auth";
  static constexpr Phase kPhase = Phase::kAuthenticate;
  Verdict admit(RequestContext& ctx) override;
};

}  // namespace arbiter
