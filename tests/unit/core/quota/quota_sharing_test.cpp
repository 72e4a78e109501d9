// Shared quotas (quota_store.redis) in the pure ledger: this replica spends
// leases taken from the store in blocks, asks for a refill only when a lease
// is short (one at a time), is refused locally while the store says the
// bucket is empty, stands in with limit / replicas while the store is down,
// and hands back idle leases, debt and what it admitted meanwhile.
#include <gtest/gtest.h>

#include "core/quota/quota_ledger.hpp"

namespace arbiter::quota::quota_sharing_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);

QuotaLedger shared_ledger(QuotaLimits q, StoreDownPolicy down = StoreDownPolicy::kLocal) {
  TenantConfig t;
  t.name = "alpha";
  t.team = "alpha";
  t.quotas = {std::move(q)};
  t.quota_store_down = down;
  return QuotaLedger({t}, {}, Sharing{.replicas = 4, .lease_share = 0.1});
}

Subject alpha(StoreDownPolicy down = StoreDownPolicy::kLocal) {
  return {.tenant = "alpha", .klass = "chat", .model = "m1", .store_down = down};
}

TEST(QuotaSharing, AShortLeaseIsRefilledInBlocksThenSpentLocally) {
  QuotaLedger ledger = shared_ledger({.tokens_per_minute = 10'000});
  auto first = ledger.reserve(alpha(), t0, 300);
  ASSERT_FALSE(first.has_value());
  EXPECT_TRUE(first.error().lease_short);
  auto needs = ledger.lease_needs(alpha(), t0, 300);
  ASSERT_EQ(needs.size(), 1u);
  EXPECT_EQ(needs[0].ref.kind, LimitKind::kTokensPerMinute);
  EXPECT_DOUBLE_EQ(needs[0].need, 300);
  EXPECT_DOUBLE_EQ(needs[0].want, 300 + 1'000);  // plus a block of 10% of the limit
  EXPECT_FALSE(needs[0].in_flight);
  // A second request meanwhile waits for the same refill.
  auto again = ledger.lease_needs(alpha(), t0, 300);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again[0].in_flight);
  ledger.lease_granted(needs[0].ref, t0, 1'300, 8'700, seconds(8));
  // 1,300 units: four requests of 300, then short again.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ledger.reserve(alpha(), t0, 300).has_value()) << i;
  const auto fifth = ledger.reserve(alpha(), t0, 300);
  ASSERT_FALSE(fifth.has_value());
  EXPECT_TRUE(fifth.error().lease_short);
}

TEST(QuotaSharing, AnEmptyStoreRefusesLocallyUntilItRefills) {
  QuotaLedger ledger = shared_ledger({.requests_per_minute = 60});
  ASSERT_FALSE(ledger.reserve(alpha(), t0, 0).has_value());
  const auto needs = ledger.lease_needs(alpha(), t0, 0);
  ASSERT_EQ(needs.size(), 1u);
  ledger.lease_refused(needs[0].ref, t0, milliseconds(700));
  const auto r = ledger.reserve(alpha(), t0 + milliseconds(200), 0);
  ASSERT_FALSE(r.has_value());
  EXPECT_FALSE(r.error().lease_short);  // no store call: the store said when
  EXPECT_EQ(r.error().retry_after, milliseconds(500));
  EXPECT_TRUE(ledger.lease_needs(alpha(), t0 + milliseconds(200), 0).empty());
  // Then it may ask again.
  const auto later = ledger.reserve(alpha(), t0 + milliseconds(800), 0);
  ASSERT_FALSE(later.has_value());
  EXPECT_TRUE(later.error().lease_short);
}

TEST(QuotaSharing, WhileTheStoreIsDownEachReplicaStandsInForItsShare) {
  QuotaLedger ledger = shared_ledger({.requests_per_minute = 400});
  ledger.set_store_up(false);
  int admitted = 0;
  for (int i = 0; i < 500; ++i) {
    if (auto r = ledger.reserve(alpha(), t0, 0)) {
      ++admitted;
      ledger.settle(*r, t0, 0);
    }
  }
  EXPECT_EQ(admitted, 100);  // 400 / 4 replicas
  // Back up: the 100 are charged to the store.
  ledger.set_store_up(true);
  const auto charges = ledger.settle_with_store(t0, seconds(2));
  ASSERT_EQ(charges.size(), 1u);
  EXPECT_DOUBLE_EQ(charges[0].units, -100);
  EXPECT_TRUE(ledger.settle_with_store(t0, seconds(2)).empty());
}

TEST(QuotaSharing, StoreDownPoliciesOpenAndClosed) {
  QuotaLedger open = shared_ledger({.requests_per_minute = 4}, StoreDownPolicy::kOpen);
  open.set_store_up(false);
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(open.reserve(alpha(StoreDownPolicy::kOpen), t0, 10).has_value());
  QuotaLedger closed = shared_ledger({.requests_per_minute = 4}, StoreDownPolicy::kClosed);
  closed.set_store_up(false);
  const auto r = closed.reserve(alpha(StoreDownPolicy::kClosed), t0, 10);
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(r.error().store_down);
}

TEST(QuotaSharing, IdleLeasesGoBackAndDebtIsCharged) {
  QuotaLedger ledger = shared_ledger({.tokens_per_minute = 10'000});
  (void)ledger.reserve(alpha(), t0, 500);
  const auto needs = ledger.lease_needs(alpha(), t0, 500);
  ledger.lease_granted(needs[0].ref, t0, 1'500, 8'500, seconds(9));
  auto r = ledger.reserve(alpha(), t0, 500);
  ASSERT_TRUE(r.has_value());
  ledger.settle(*r, t0, 200);  // 300 unused: back to the lease
  EXPECT_TRUE(ledger.settle_with_store(t0 + seconds(1), seconds(2)).empty());  // not idle yet
  const auto idle = ledger.settle_with_store(t0 + seconds(2), seconds(2));
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_DOUBLE_EQ(idle[0].units, 1'300);  // 1,500 - 200 used
  // A request that used more than its lease holds: charged at once.
  (void)ledger.reserve(alpha(), t0 + seconds(3), 100);
  const auto more = ledger.lease_needs(alpha(), t0 + seconds(3), 100);
  ledger.lease_granted(more[0].ref, t0 + seconds(3), 100, 9'000, seconds(6));
  auto big = ledger.reserve(alpha(), t0 + seconds(3), 100);
  ASSERT_TRUE(big.has_value());
  ledger.settle(*big, t0 + seconds(3), 400);
  const auto debt = ledger.settle_with_store(t0 + seconds(3), seconds(2));
  ASSERT_EQ(debt.size(), 1u);
  EXPECT_DOUBLE_EQ(debt[0].units, -300);
}

TEST(QuotaSharing, ConcurrencyIsLeasedInSlotsAndGivenBackAtTheEnd) {
  // max_concurrent 40 over 4 replicas, leases of 10% (4 slots) beyond need.
  QuotaLedger ledger = shared_ledger({.max_concurrent = 40});
  ASSERT_FALSE(ledger.reserve(alpha(), t0, 0).has_value());
  const auto needs = ledger.lease_needs(alpha(), t0, 0);
  ASSERT_EQ(needs.size(), 1u);
  EXPECT_EQ(needs[0].ref.kind, LimitKind::kConcurrent);
  EXPECT_DOUBLE_EQ(needs[0].need, 1);
  EXPECT_DOUBLE_EQ(needs[0].want, 5);
  ledger.lease_granted(needs[0].ref, t0, 5, 35, {});
  std::vector<Reservation> held;
  for (int i = 0; i < 5; ++i) held.push_back(*ledger.reserve(alpha(), t0, 0));
  ASSERT_FALSE(ledger.reserve(alpha(), t0, 0).has_value());  // the sixth needs more slots
  // Ending a request frees its slot for the next, here, with no store call.
  ledger.release(held.back());
  held.pop_back();
  EXPECT_TRUE(ledger.reserve(alpha(), t0, 0).has_value());
  // Idle free slots go back to the store; the ones in use stay.
  for (auto& r : held) ledger.release(r);
  const auto back = ledger.settle_with_store(t0 + seconds(5), seconds(2));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_DOUBLE_EQ(back[0].units, 4);  // 5 leased, 1 still in use
}

TEST(QuotaSharing, WhileTheStoreIsDownConcurrencyIsTheReplicasShare) {
  QuotaLedger ledger = shared_ledger({.max_concurrent = 40});
  ledger.set_store_up(false);
  int admitted = 0;
  for (int i = 0; i < 20; ++i) admitted += ledger.reserve(alpha(), t0, 0).has_value();
  EXPECT_EQ(admitted, 10);  // 40 / 4 replicas
  // Nothing to report when it is back: slots are not a rate.
  ledger.set_store_up(true);
  EXPECT_TRUE(ledger.settle_with_store(t0, seconds(2)).empty());
}

}  // namespace
}  // namespace arbiter::quota::quota_sharing_test
