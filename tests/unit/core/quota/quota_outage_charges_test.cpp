// A store back from an outage is charged what the stand-in admitted before
// any lease is taken from it (QuotaLedger::outage_charges, issue 40 defect
// 3): only those admissions, while the store is still marked down, whatever
// the lease holds; once, and restored for the next try when the charge
// fails.
#include <gtest/gtest.h>

#include "core/quota/quota_ledger.hpp"

namespace arbiter::quota::quota_outage_charges_test {
namespace {

using std::chrono::seconds;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);

QuotaLedger two_replicas(QuotaLimits q) {
  TenantConfig t;
  t.name = "alpha";
  t.team = "alpha";
  t.quotas = {std::move(q)};
  return QuotaLedger({t}, {}, Sharing{.replicas = 2, .lease_share = 0.1});
}

const Subject kAlpha{.tenant = "alpha", .klass = "chat", .model = "m1", .store_down = StoreDownPolicy::kLocal};

int admit_all(QuotaLedger& ledger, int tries, int64_t tokens) {
  int admitted = 0;
  for (int i = 0; i < tries; ++i) {
    if (auto r = ledger.reserve(kAlpha, t0, tokens)) {
      ++admitted;
      ledger.settle(*r, t0, tokens);
    }
  }
  return admitted;
}

TEST(QuotaOutageCharges, TheStandInsAdmissionsAreChargedWhileTheStoreIsStillDown) {
  QuotaLedger ledger = two_replicas({.requests_per_minute = 60, .tokens_per_minute = 6'000});
  // A lease held from before the outage stays out of the charge.
  ASSERT_FALSE(ledger.reserve(kAlpha, t0, 100).has_value());
  for (const LeaseNeed& need : ledger.lease_needs(kAlpha, t0, 100)) {
    ledger.lease_granted(need.ref, t0, need.want, 0, seconds(60));
  }
  ledger.set_store_up(false);
  EXPECT_EQ(admit_all(ledger, 100, 100), 30);  // the stand-in: 60 / 2 replicas, 6,000 / 2 tokens
  const std::vector<StoreCharge> charges = ledger.outage_charges();
  ASSERT_EQ(charges.size(), 2u);
  double requests = 0, tokens = 0;
  for (const StoreCharge& c : charges) {
    (c.ref.kind == LimitKind::kRequestsPerMinute ? requests : tokens) += c.units;
  }
  EXPECT_DOUBLE_EQ(requests, -30);
  EXPECT_DOUBLE_EQ(tokens, -3'000);
  EXPECT_TRUE(ledger.outage_charges().empty()) << "charged once";
  // The hand-back after the store is up holds no second charge for them.
  ledger.set_store_up(true);
  for (const StoreCharge& c : ledger.settle_with_store(t0, seconds(0))) EXPECT_GT(c.units, 0);
}

TEST(QuotaOutageCharges, AFailedChargeIsKeptForTheNextTry) {
  QuotaLedger ledger = two_replicas({.requests_per_minute = 60});
  ledger.set_store_up(false);
  ASSERT_EQ(admit_all(ledger, 10, 0), 10);
  const std::vector<StoreCharge> charges = ledger.outage_charges();
  ASSERT_EQ(charges.size(), 1u);
  ledger.restore(charges[0]);
  const std::vector<StoreCharge> again = ledger.outage_charges();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_DOUBLE_EQ(again[0].units, -10);
}

}  // namespace
}  // namespace arbiter::quota::quota_outage_charges_test
