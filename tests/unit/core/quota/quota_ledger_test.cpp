// Tenant and team quotas: all-or-nothing reservations, the longest wait
// decides, reconciliation with real usage, scopes by class and model, and
// nothing left reserved however requests end.
#include "core/quota/quota_ledger.hpp"

#include <gtest/gtest.h>

#include <random>

namespace arbiter::quota::quota_ledger_test {
namespace {

using std::chrono::seconds;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);

TenantConfig tenant(std::string name, std::string team, std::vector<QuotaLimits> quotas) {
  TenantConfig t;
  t.name = std::move(name);
  t.team = std::move(team);
  t.quotas = std::move(quotas);
  return t;
}

Subject who(std::string_view tenant, std::string_view klass = "chat", std::string_view model = "m1") {
  return {.tenant = tenant, .klass = klass, .model = model};
}

TEST(QuotaLedger, TokensAreReservedAtAdmissionAndReconciledWithUsage) {
  QuotaLedger ledger({tenant("alpha", "alpha", {{.tokens_per_minute = 1000}})}, {});
  auto a = ledger.reserve(who("alpha"), t0, 600);
  ASSERT_TRUE(a.has_value());
  // In flight, the reservation counts: 600 more do not fit.
  auto b = ledger.reserve(who("alpha"), t0, 600);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().limit, LimitKind::kTokensPerMinute);
  EXPECT_EQ(b.error().owner, "tenant alpha");
  // 200 short: at 1000/min, 12 s.
  EXPECT_EQ(b.error().retry_after, seconds(12));
  // It used 100: 500 go back, and 600 fit now.
  ledger.settle(*a, t0, 100);
  EXPECT_TRUE(ledger.reserve(who("alpha"), t0, 600).has_value());
}

TEST(QuotaLedger, UsingMoreThanReservedIsDebt) {
  QuotaLedger ledger({tenant("alpha", "alpha", {{.tokens_per_minute = 600}})}, {});
  auto a = ledger.reserve(who("alpha"), t0, 100);
  ASSERT_TRUE(a.has_value());
  ledger.settle(*a, t0, 900);  // 300 over the whole minute's limit
  const auto b = ledger.reserve(who("alpha"), t0, 1);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().retry_after, seconds(30) + std::chrono::milliseconds(100));
}

TEST(QuotaLedger, AllOrNothingAcrossTenantAndTeam) {
  QuotaLedger ledger({tenant("alpha", "ml", {{.requests_per_minute = 10}}), tenant("beta", "ml", {})},
                     {{.name = "ml", .quotas = {{.requests_per_minute = 3}}}});
  EXPECT_TRUE(ledger.limits("beta"));  // through its team
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ledger.reserve(who(i % 2 ? "beta" : "alpha"), t0, 0).has_value());
  const auto r = ledger.reserve(who("alpha"), t0, 0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().owner, "team ml");
  // The refused request took nothing from alpha's own 10.
  for (const EntryState& e : ledger.snapshot(t0)) {
    if (e.owner == "tenant alpha") {
      EXPECT_NEAR(*e.requests_remaining, 8, 1e-6);
    }
  }
}

TEST(QuotaLedger, TheLongestWaitIsTheRetryAfter) {
  QuotaLedger ledger({tenant("alpha", "alpha", {{.requests_per_minute = 60, .tokens_per_minute = 60}})}, {});
  ASSERT_TRUE(ledger.reserve(who("alpha"), t0, 60).has_value());
  const auto r = ledger.reserve(who("alpha"), t0, 30);  // requests: 1 s; tokens: 30 s
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().limit, LimitKind::kTokensPerMinute);
  EXPECT_EQ(r.error().retry_after, seconds(30));
}

TEST(QuotaLedger, ARequestOverTheLimitCanNeverFit) {
  QuotaLedger ledger({tenant("alpha", "alpha", {{.tokens_per_minute = 1000}})}, {});
  const auto r = ledger.reserve(who("alpha"), t0, 1001);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().retry_after, Duration::max());
}

TEST(QuotaLedger, ConcurrencyIsHeldUntilTheRequestEnds) {
  QuotaLedger ledger({tenant("alpha", "alpha", {{.max_concurrent = 2}})}, {});
  auto a = ledger.reserve(who("alpha"), t0, 10);
  auto b = ledger.reserve(who("alpha"), t0, 10);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(ledger.reserve(who("alpha"), t0, 10).has_value());
  ledger.release(*a);
  EXPECT_TRUE(ledger.reserve(who("alpha"), t0, 10).has_value());
}

TEST(QuotaLedger, ScopedEntriesProtectInteractiveQuotaFromBatch) {
  // 1000 tokens a minute in all, of which batch may use 400: 600 stay for
  // the interactive classes whatever batch does.
  QuotaLedger ledger(
      {tenant("alpha", "alpha", {{.tokens_per_minute = 1000}, {.tokens_per_minute = 400, .classes = {"batch"}}})}, {});
  int batch_admitted = 0;
  for (int i = 0; i < 10; ++i) batch_admitted += ledger.reserve(who("alpha", "batch"), t0, 100).has_value();
  EXPECT_EQ(batch_admitted, 4);
  int chat_admitted = 0;
  for (int i = 0; i < 10; ++i) chat_admitted += ledger.reserve(who("alpha", "chat"), t0, 100).has_value();
  EXPECT_EQ(chat_admitted, 6);
  // A model scope covers only that model.
  QuotaLedger by_model({tenant("alpha", "alpha", {{.requests_per_minute = 1, .models = {"big"}}})}, {});
  EXPECT_TRUE(by_model.reserve(who("alpha", "chat", "big"), t0, 0).has_value());
  EXPECT_FALSE(by_model.reserve(who("alpha", "chat", "big"), t0, 0).has_value());
  EXPECT_TRUE(by_model.reserve(who("alpha", "chat", "small"), t0, 0).has_value());
}

TEST(QuotaLedger, UnlimitedTenantsAndAnonymousReserveNothing) {
  QuotaLedger ledger({tenant("alpha", "alpha", {{.requests_per_minute = 1}}), tenant("beta", "beta", {})}, {});
  EXPECT_FALSE(ledger.limits("beta"));
  EXPECT_FALSE(ledger.limits(""));
  for (int i = 0; i < 100; ++i) {
    auto r = ledger.reserve(who("beta"), t0, 1'000'000);
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->entries.empty());
  }
}

TEST(QuotaLedger, StatusReportsTheTightestEntry) {
  QuotaLedger ledger({tenant("alpha", "ml", {{.requests_per_minute = 100, .tokens_per_minute = 10'000}})},
                     {{.name = "ml", .quotas = {{.requests_per_minute = 10}}}});
  ASSERT_TRUE(ledger.reserve(who("alpha"), t0, 2'500).has_value());
  const RateStatus s = ledger.status(who("alpha"), t0);
  ASSERT_TRUE(s.requests && s.tokens);
  EXPECT_DOUBLE_EQ(s.requests->limit, 10);  // 9 of 10 left beats 99 of 100
  EXPECT_NEAR(s.requests->remaining, 9, 1e-6);
  EXPECT_NEAR(s.tokens->remaining, 7'500, 1e-6);
  EXPECT_EQ(s.tokens->reset, seconds(15));
}

// Property: whatever mix of settles (under and over the estimate) and
// releases, once every request has ended nothing stays reserved or in
// flight, and the tokens admitted in any minute stay within the limit plus
// the debt of requests that used more than they reserved.
TEST(QuotaLedger, NothingStaysReservedAndAdmissionsStayWithinTheLimit) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    const double limit = std::uniform_real_distribution<double>(1'000, 100'000)(rng);
    QuotaLedger ledger({tenant("alpha", "alpha", {{.tokens_per_minute = limit, .max_concurrent = 50}})}, {});
    std::vector<std::pair<Reservation, TimePoint>> open;
    TimePoint now = t0;
    double charged = 0;  // tokens finally charged (used, or reserved while open)
    const TimePoint end = t0 + std::chrono::minutes(3);
    while (now < end) {
      const auto want = std::uniform_int_distribution<int64_t>(1, static_cast<int64_t>(limit / 8))(rng);
      if (auto r = ledger.reserve(who("alpha"), now, want)) open.emplace_back(std::move(*r), now);
      // End some: the oldest first, a third released, the rest settled at
      // 0-100% of the reservation.
      while (!open.empty() && (open.size() > 40 || std::bernoulli_distribution(0.4)(rng))) {
        Reservation& r = open.front().first;
        if (std::bernoulli_distribution(1.0 / 3)(rng)) {
          ledger.release(r);
        } else {
          const auto used = std::uniform_int_distribution<int64_t>(0, r.tokens)(rng);
          charged += static_cast<double>(used);
          ledger.settle(r, now, used);
        }
        open.erase(open.begin());
      }
      now += std::chrono::milliseconds(std::uniform_int_distribution<int>(1, 500)(rng));
    }
    for (auto& [r, at] : open) ledger.release(r);
    for (const EntryState& e : ledger.snapshot(now)) {
      EXPECT_EQ(e.in_flight, 0u);
      EXPECT_EQ(e.reserved_tokens, 0);
    }
    // Three minutes: the first minute's burst plus three of refill.
    EXPECT_LE(charged, limit * 4 + 1) << "limit " << limit;
  }
}

}  // namespace
}  // namespace arbiter::quota::quota_ledger_test
