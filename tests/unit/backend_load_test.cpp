#include "core/backend_load.hpp"

#include <gtest/gtest.h>

#include "core/tenants.hpp"

namespace arbiter {
namespace {

TEST(BackendLoad, PicksLeastLoadedRelativeToLimit) {
  BackendLoad load({4, 8});
  // Fill: the 8-slot backend should take about twice as many.
  std::vector<int> taken(2, 0);
  for (int i = 0; i < 12; ++i) ++taken[*load.acquire_least_loaded()];
  EXPECT_EQ(taken[0], 4);
  EXPECT_EQ(taken[1], 8);
  EXPECT_FALSE(load.acquire_least_loaded());  // all full
  load.release(1);
  EXPECT_EQ(load.acquire_least_loaded(), 1u);
  EXPECT_EQ(load.total_in_flight(), 12u);
}

TEST(BackendLoad, EqualBackendsShareTheLoad) {
  BackendLoad load({100, 100, 100});
  std::vector<int> taken(3, 0);
  for (int i = 0; i < 30; ++i) {
    const auto b = *load.acquire_least_loaded();
    ++taken[b];
    load.release(b);  // always idle: the rotation must still spread picks
  }
  EXPECT_EQ(taken, (std::vector<int>{10, 10, 10}));
  EXPECT_EQ(load.total_in_flight(), 0u);
}

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

}  // namespace
}  // namespace arbiter
