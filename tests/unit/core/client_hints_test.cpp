// Client hints: the two headers' values, what is a 400, and how a tenant's
// allowance bounds what a request gets (core/client_hints.hpp).
#include "core/client_hints.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string_view>

namespace arbiter {
namespace {

using namespace std::chrono_literals;

std::optional<ApiError> refusal(std::optional<std::string_view> priority,
                                std::optional<std::string_view> ttft) {
  auto hints = parse_client_hints(priority, ttft);
  if (hints) return std::nullopt;
  return hints.error();
}

TEST(ClientHints, AbsentHeadersAreNoHints) {
  const auto hints = parse_client_hints(std::nullopt, std::nullopt);
  ASSERT_TRUE(hints);
  EXPECT_FALSE(hints->any());
}

TEST(ClientHints, ReadsIntegersWithinBounds) {
  const auto hints = parse_client_hints(" -3 ", "1500");
  ASSERT_TRUE(hints);
  EXPECT_EQ(hints->priority, -3);
  EXPECT_EQ(hints->ttft, 1500ms);
  EXPECT_EQ(parse_client_hints("1000000", "86400000")->priority, 1'000'000);
  EXPECT_EQ(parse_client_hints("-1000000", "1")->ttft, 1ms);
}

TEST(ClientHints, AMalformedValueIsA400NamingItsHeader) {
  for (const std::string_view bad :
       {"", "high", "1.5", "+1", "2 3", "0x10", "1000001", "-1000001", "99999999999999999999999"}) {
    SCOPED_TRACE(bad);
    const auto error = refusal(bad, std::nullopt);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->status(), 400);
    EXPECT_EQ(error->param, "x-priority");
  }
  for (const std::string_view bad : {"", "0", "-5", "500ms", "1e3", "86400001", "3.5"}) {
    SCOPED_TRACE(bad);
    const auto error = refusal(std::nullopt, bad);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->status(), 400);
    EXPECT_EQ(error->param, "x-slo-ttft-ms");
    EXPECT_NE(error->message.find("x-slo-ttft-ms"), std::string::npos) << error->message;
  }
}

// The chat class: priority 2, TTFT target 2 s.
sched::ClassPolicy chat() {
  sched::ClassPolicy c;
  c.name = "chat";
  c.engine_priority = 2;
  c.ttft_slo = 2s;
  c.max_queue_wait = 30s;
  return c;
}

TEST(ClientHints, ByDefaultAHintMayOnlyLowerItsRequest) {
  const TenantConfig tenant{.name = "t"};
  // Lower (a larger value, a looser deadline): as asked.
  BoundHints b = bound_client_hints({.priority = 7, .ttft = 5000ms}, chat(), &tenant);
  EXPECT_EQ(b.priority, 7);
  EXPECT_EQ(b.ttft, std::chrono::duration_cast<sched::Duration>(5s));
  EXPECT_FALSE(b.priority_clamped);
  EXPECT_FALSE(b.ttft_clamped);
  // Higher than the class: held to the class's own, and said to be clamped.
  b = bound_client_hints({.priority = 0, .ttft = 100ms}, chat(), &tenant);
  EXPECT_EQ(b.priority, 2);
  EXPECT_EQ(b.ttft, std::chrono::duration_cast<sched::Duration>(2s));
  EXPECT_TRUE(b.priority_clamped);
  EXPECT_TRUE(b.ttft_clamped);
  // No hint: nothing of its own.
  b = bound_client_hints({}, chat(), &tenant);
  EXPECT_FALSE(b.priority);
  EXPECT_FALSE(b.ttft);
}

TEST(ClientHints, ATenantsAllowanceBoundsHowFarAHintMayRaise) {
  const TenantConfig tenant{.name = "t", .max_priority_raise = 1, .min_ttft_hint = 300ms};
  BoundHints b = bound_client_hints({.priority = 1, .ttft = 500ms}, chat(), &tenant);
  EXPECT_EQ(b.priority, 1);  // one above the class's 2
  EXPECT_EQ(b.ttft, std::chrono::duration_cast<sched::Duration>(500ms));
  EXPECT_FALSE(b.priority_clamped || b.ttft_clamped);
  b = bound_client_hints({.priority = -5, .ttft = 50ms}, chat(), &tenant);
  EXPECT_EQ(b.priority, 1);
  EXPECT_EQ(b.ttft, std::chrono::duration_cast<sched::Duration>(300ms));
  EXPECT_TRUE(b.priority_clamped && b.ttft_clamped);
  // A floor above the class's own target never forbids what the class gives.
  const TenantConfig loose{.name = "l", .min_ttft_hint = 10s};
  b = bound_client_hints({.ttft = 2000ms}, chat(), &loose);
  EXPECT_EQ(b.ttft, std::chrono::duration_cast<sched::Duration>(2s));
  EXPECT_FALSE(b.ttft_clamped);
}

TEST(ClientHints, AnonymousClientsGetNoRaise) {
  const BoundHints b = bound_client_hints({.priority = 0, .ttft = 10ms}, chat(), nullptr);
  EXPECT_EQ(b.priority, 2);
  EXPECT_EQ(b.ttft, std::chrono::duration_cast<sched::Duration>(2s));
  EXPECT_TRUE(b.priority_clamped && b.ttft_clamped);
}

TEST(ClientHints, AClassWithoutATtftSloIsJudgedByItsQueueDeadline) {
  sched::ClassPolicy batch;
  batch.name = "batch";
  batch.max_queue_wait = 3600s;
  EXPECT_EQ(class_ttft_target(batch), std::chrono::duration_cast<sched::Duration>(3600s));
  EXPECT_EQ(class_ttft_target(chat()), std::chrono::duration_cast<sched::Duration>(2s));
  const TenantConfig tenant{.name = "t", .min_ttft_hint = 1s};
  const BoundHints b = bound_client_hints({.ttft = 5000ms}, batch, &tenant);
  EXPECT_EQ(b.ttft, std::chrono::duration_cast<sched::Duration>(5s));
  EXPECT_FALSE(b.ttft_clamped);
}

}  // namespace
}  // namespace arbiter
