// Quotas across a config reload (QuotaLedger::carry_from): what an entry
// has used carries by owner and scope, a changed limit applies at once with
// the usage kept, reservations made before the reload settle on the
// entries that carried theirs, and a lease refill answered after it lands
// on its heir. The property test runs random reservations, ends and
// reloads and checks that nothing is counted twice or left in flight.
#include <gtest/gtest.h>

#include <random>

#include "core/quota/quota_ledger.hpp"

namespace arbiter::quota::quota_reload_test {
namespace {

using std::chrono::seconds;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);

TenantConfig tenant(std::string name, std::vector<QuotaLimits> quotas, std::string team = "") {
  TenantConfig t;
  t.name = std::move(name);
  t.team = team.empty() ? t.name : std::move(team);
  t.quotas = std::move(quotas);
  return t;
}

Subject who(std::string_view tenant, std::string_view klass = "chat") {
  return {.tenant = tenant, .klass = klass, .model = "m1"};
}

// A ledger built from `tenants` taking over from `old`, as a reload does.
QuotaLedger reloaded(QuotaLedger& old, const std::vector<TenantConfig>& tenants, const std::vector<TeamConfig>& teams,
                     TimePoint now, std::optional<Sharing> sharing = std::nullopt) {
  QuotaLedger next(tenants, teams, sharing);
  next.carry_from(old, now);
  return next;
}

int admitted(QuotaLedger& ledger, const Subject& s, TimePoint now, int tries) {
  int n = 0;
  for (int i = 0; i < tries; ++i) {
    if (auto r = ledger.reserve(s, now, 0)) {
      ledger.settle(*r, now, 0);
      ++n;
    }
  }
  return n;
}

TEST(QuotaReload, WhatWasUsedCarriesAndANewLimitAppliesAtOnce) {
  QuotaLedger ledger({tenant("alpha", {{.requests_per_minute = 10}})}, {});
  EXPECT_EQ(admitted(ledger, who("alpha"), t0, 20), 10);
  // Raised to 15: the 10 used stay used, 5 more fit now.
  QuotaLedger raised = reloaded(ledger, {tenant("alpha", {{.requests_per_minute = 15}})}, {}, t0);
  EXPECT_EQ(admitted(raised, who("alpha"), t0, 20), 5);
  // Lowered to 5 with 15 used: nothing fits for the next 2 minutes' worth.
  QuotaLedger lowered = reloaded(raised, {tenant("alpha", {{.requests_per_minute = 5}})}, {}, t0);
  const auto refused = lowered.reserve(who("alpha"), t0, 0);
  ASSERT_FALSE(refused.has_value());
  EXPECT_GT(refused.error().retry_after, seconds(60));
  // A ledger built fresh, as a restart would, forgets it all.
  QuotaLedger fresh({tenant("alpha", {{.requests_per_minute = 5}})}, {});
  EXPECT_EQ(admitted(fresh, who("alpha"), t0, 20), 5);
}

TEST(QuotaReload, EntriesAreMatchedByOwnerAndScopeNotByPlace) {
  const QuotaLimits chat{.requests_per_minute = 3, .classes = {"chat"}};
  const QuotaLimits all{.requests_per_minute = 100};
  QuotaLedger ledger({tenant("alpha", {chat, all})}, {});
  EXPECT_EQ(admitted(ledger, who("alpha"), t0, 5), 3);
  // The list reordered and a tenant added: the chat entry is still spent.
  QuotaLedger next = reloaded(ledger, {tenant("beta", {all}), tenant("alpha", {all, chat})}, {}, t0);
  EXPECT_EQ(admitted(next, who("alpha"), t0, 5), 0);
  EXPECT_EQ(admitted(next, who("alpha", "batch"), t0, 5), 5);
  EXPECT_EQ(admitted(next, who("beta"), t0, 5), 5);
  // Its scope changed: another quota, which starts full.
  const QuotaLimits chat_and_batch{.requests_per_minute = 3, .classes = {"chat", "batch"}};
  QuotaLedger rescoped = reloaded(next, {tenant("alpha", {all, chat_and_batch})}, {}, t0);
  EXPECT_EQ(admitted(rescoped, who("alpha"), t0, 5), 3);
}

TEST(QuotaReload, ReservationsInFlightEndOnTheEntriesThatCarriedThem) {
  QuotaLedger ledger({tenant("alpha", {{.tokens_per_minute = 1000, .max_concurrent = 2}})}, {});
  auto a = ledger.reserve(who("alpha"), t0, 400);
  auto b = ledger.reserve(who("alpha"), t0, 400);
  ASSERT_TRUE(a && b);
  QuotaLedger next = reloaded(ledger, {tenant("alpha", {{.tokens_per_minute = 1000, .max_concurrent = 2}})}, {}, t0);
  // Both still count: no third slot, and their 800 tokens are still held.
  EXPECT_FALSE(next.reserve(who("alpha"), t0, 0).has_value());
  next.settle(*a, t0, 100);  // used 100 of its 400: 300 come back, a slot frees
  auto c = next.reserve(who("alpha"), t0, 500);
  ASSERT_TRUE(c.has_value());  // 1000 - 400 - 100 = 500 left
  EXPECT_EQ(next.snapshot(t0)[0].in_flight, 2u);
  EXPECT_EQ(next.snapshot(t0)[0].reserved_tokens, 900);
  // The quota removed by a second reload: old reservations end without effect.
  QuotaLedger without = reloaded(next, {tenant("alpha", {})}, {}, t0);
  without.release(*b);
  without.release(*c);
  EXPECT_TRUE(without.snapshot(t0).empty());
  EXPECT_FALSE(without.limits("alpha"));
}

TEST(QuotaReload, ADynamicQuotaKeepsItsRecomputedLimit) {
  const TeamConfig team{.name = "ml", .quotas = {}, .dynamic_quota = DynamicQuotaConfig{.members = 2, .per_member = 5}};
  QuotaLedger ledger({tenant("alpha", {}, "ml")}, {team});
  ASSERT_TRUE(ledger.set_dynamic_limit("ml", t0, 4));  // recomputed from usage: 4 a minute
  QuotaLedger next = reloaded(ledger, {tenant("alpha", {}, "ml"), tenant("beta", {}, "ml")}, {team}, t0);
  EXPECT_EQ(admitted(next, who("beta"), t0, 10), 4);  // not the formula's 10 without history
}

TEST(QuotaReload, ALeaseRefillAnsweredAfterAReloadLandsOnItsHeir) {
  const Sharing sharing{.replicas = 2, .lease_share = 0.1};
  QuotaLedger ledger({tenant("alpha", {{.tokens_per_minute = 10'000}})}, {}, sharing);
  ASSERT_FALSE(ledger.reserve(who("alpha"), t0, 300).has_value());
  const auto needs = ledger.lease_needs(who("alpha"), t0, 300);
  ASSERT_EQ(needs.size(), 1u);
  // Beta's new quota comes first: alpha's entry moves to the second place.
  QuotaLedger next = reloaded(
      ledger, {tenant("beta", {{.requests_per_minute = 5}}), tenant("alpha", {{.tokens_per_minute = 10'000}})}, {}, t0,
      sharing);
  // The refill in flight is not waited for after a reload (its answer may
  // name a removed limit): a new request asks for its own.
  const auto again = next.lease_needs(who("alpha"), t0, 300);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_FALSE(again[0].in_flight);
  next.lease_granted(needs[0].ref, t0, 1'300, 8'700, seconds(8));  // the old ref's answer
  EXPECT_TRUE(next.reserve(who("alpha"), t0, 300).has_value());
  next.refill_failed(again[0].ref);
  // Removed: a late answer and a restored charge are dropped, not misplaced.
  QuotaLedger gone = reloaded(next, {tenant("alpha", {})}, {}, t0, sharing);
  gone.lease_granted(again[0].ref, t0, 500, 8'000, seconds(8));
  gone.restore({.ref = again[0].ref, .units = 100});
  EXPECT_TRUE(gone.snapshot(t0).empty());
}

TEST(QuotaReload, RandomReservationsEndsAndReloadsLeaveNothingInFlight) {
  // Variants of one config: alpha's all-class entry is in every one (with
  // different limits and places), its chat entry and its team come and go.
  const QuotaLimits chat{.tokens_per_minute = 5'000, .classes = {"chat"}};
  auto variant = [&](int v) {
    std::vector<QuotaLimits> alpha{{.requests_per_minute = 1'000.0 + 100 * v, .max_concurrent = 1'000}};
    if (v % 2) alpha.insert(alpha.begin(), chat);
    std::vector<TenantConfig> tenants{tenant("alpha", alpha, v % 3 ? "ml" : "alpha"),
                                      tenant("beta", {{.tokens_per_minute = 20'000}}, "ml")};
    std::vector<TeamConfig> teams{{.name = "ml", .quotas = {{.max_concurrent = 500}}, .dynamic_quota = {}}};
    return std::pair(tenants, teams);
  };
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    auto [tenants, teams] = variant(0);
    QuotaLedger ledger(tenants, teams);
    struct Live {
      Reservation r;
      bool alpha;
    };
    std::vector<Live> live;
    TimePoint now = t0;
    for (int step = 0; step < 600; ++step) {
      now += std::chrono::milliseconds(rng() % 50);
      const unsigned op = rng() % 10;
      if (op < 5) {
        const bool alpha = rng() % 2;
        auto r = ledger.reserve(who(alpha ? "alpha" : "beta", rng() % 2 ? "chat" : "batch"), now, rng() % 200);
        if (r) live.push_back({std::move(*r), alpha});
      } else if (op < 8 && !live.empty()) {
        const std::size_t i = rng() % live.size();
        if (rng() % 2) {
          ledger.settle(live[i].r, now, rng() % 300);
        } else {
          ledger.release(live[i].r);
        }
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (op == 9) {
        auto [t, g] = variant(static_cast<int>(rng() % 6));
        ledger = reloaded(ledger, t, g, now);
      }
      // Alpha's all-class entry has been carried through every reload:
      // its in-flight count is alpha's live reservations, exactly.
      const auto alive = static_cast<uint32_t>(std::ranges::count_if(live, [](const Live& l) { return l.alpha; }));
      for (const EntryState& e : ledger.snapshot(now)) {
        if (e.owner == "tenant alpha" && e.requests_remaining) {
          ASSERT_EQ(e.in_flight, alive) << "seed " << seed << " step " << step;
        }
      }
    }
    for (Live& l : live) ledger.release(l.r);
    for (const EntryState& e : ledger.snapshot(now)) {
      EXPECT_EQ(e.in_flight, 0u) << e.owner << " seed " << seed;
      EXPECT_EQ(e.reserved_tokens, 0) << e.owner << " seed " << seed;
    }
  }
}

TEST(QuotaReload, HasQuotasSaysWhatTheLedgerLimits) {
  const std::vector<TeamConfig> teams{{.name = "ml", .quotas = {{.requests_per_minute = 5}}, .dynamic_quota = {}},
                                      {.name = "dyn", .quotas = {}, .dynamic_quota = DynamicQuotaConfig{}},
                                      {.name = "none", .quotas = {{.classes = {"chat"}}}, .dynamic_quota = {}}};
  const std::vector<TenantConfig> tenants{tenant("own", {{.tokens_per_day = 10}}), tenant("team", {}, "ml"),
                                          tenant("dynamic", {}, "dyn"), tenant("scoped_only", {}, "none"),
                                          tenant("free", {{.models = {"m1"}}})};
  const QuotaLedger ledger(tenants, teams);
  for (const TenantConfig& t : tenants) EXPECT_EQ(has_quotas(t, teams), ledger.limits(t.name)) << t.name;
}

}  // namespace
}  // namespace arbiter::quota::quota_reload_test
