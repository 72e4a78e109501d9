#include <gtest/gtest.h>

#include "core/tenants.hpp"

namespace arbiter {
namespace {

TEST(Tenants, AuthenticatesByKeyHashAndRejectsUnknownKeys) {
  std::vector<TenantConfig> tenants = {
      {.name = "alpha", .team = "a", .key_sha256 = {sha256_hex("sk-alpha")}, .allowed_classes = {}}};
  TenantDirectory on(tenants, true);
  EXPECT_EQ((*on.authenticate("Bearer sk-alpha"))->name, "alpha");
  EXPECT_EQ(on.authenticate("Bearer sk-wrong").error().status(), 401);
  EXPECT_EQ(on.authenticate("").error().status(), 401);
  EXPECT_EQ(on.authenticate("Basic sk-alpha").error().status(), 401);
  TenantDirectory off(tenants, false);
  EXPECT_EQ(*off.authenticate("Bearer sk-wrong"), nullptr);  // anonymous
  EXPECT_EQ((*off.authenticate("Bearer sk-alpha"))->name, "alpha");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// A verified client certificate's names (listener.tls) map to a tenant; an
// API key that names a tenant comes first.
TEST(Tenants, ClientCertificateNamesATenantAfterTheKey) {
  std::vector<TenantConfig> tenants = {
      {.name = "alpha", .team = "a", .key_sha256 = {sha256_hex("sk-alpha")}},
      {.name = "svc", .team = "s", .key_sha256 = {}, .client_cert_names = {"svc.internal", "spiffe://x/svc"}}};
  TenantDirectory on(tenants, true);
  const std::vector<std::string> svc_cert = {"host.example", "spiffe://x/svc"};
  EXPECT_EQ((*on.authenticate("", svc_cert))->name, "svc");
  EXPECT_EQ((*on.authenticate("Bearer sk-alpha", svc_cert))->name, "alpha");
  EXPECT_EQ((*on.authenticate("Bearer sk-wrong", svc_cert))->name, "svc");
  const std::vector<std::string> stranger = {"nobody.internal"};
  EXPECT_EQ(on.authenticate("", stranger).error().status(), 401);
  TenantDirectory off(tenants, false);
  EXPECT_EQ(*off.authenticate("", stranger), nullptr);
  EXPECT_EQ((*off.authenticate("", svc_cert))->name, "svc");
}

// RFC 9110 11.1: the auth scheme is case-insensitive (issue 16, edge item 6).
TEST(Tenants, BearerSchemeIsCaseInsensitive) {
  std::vector<TenantConfig> tenants = {
      {.name = "alpha", .team = "a", .key_sha256 = {sha256_hex("sk-alpha")}, .allowed_classes = {}}};
  TenantDirectory on(tenants, true);
  for (const char* header : {"bearer sk-alpha", "BEARER sk-alpha", "bEaReR sk-alpha"}) {
    ASSERT_TRUE(on.authenticate(header).has_value()) << header;
    EXPECT_EQ((*on.authenticate(header))->name, "alpha") << header;
  }
  EXPECT_FALSE(on.authenticate("bearerx sk-alpha").has_value());
  EXPECT_FALSE(on.authenticate("bearer sk-ALPHA").has_value());  // the key itself is exact
}

}  // namespace
}  // namespace arbiter
