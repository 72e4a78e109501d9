// The quota stage's core work per request (issue 14, in-process): reserve
// in every covering entry, then settle with the usage, for a tenant with a
// tenant entry and a team entry, among 1,000 tenants. The gateway adds one
// uncontended mutex around each call.
//   build/bench/quota_bench
#include <benchmark/benchmark.h>

#include "core/quota/quota_ledger.hpp"

namespace arbiter::quota {
namespace {

std::vector<TenantConfig> tenants(int n) {
  std::vector<TenantConfig> out;
  for (int i = 0; i < n; ++i) {
    TenantConfig t;
    t.name = "tenant-" + std::to_string(i);
    t.team = "team-" + std::to_string(i % 50);
    t.quotas = {{.requests_per_minute = 1e9, .tokens_per_minute = 1e12, .max_concurrent = 1'000'000}};
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<TeamConfig> teams() {
  std::vector<TeamConfig> out;
  for (int i = 0; i < 50; ++i) {
    out.push_back({.name = "team-" + std::to_string(i),
                   .quotas = {{.tokens_per_minute = 1e12}, {.tokens_per_minute = 1e11, .classes = {"batch"}}}});
  }
  return out;
}

void BM_Quota_ReserveAndSettle(benchmark::State& state) {
  QuotaLedger ledger(tenants(1'000), teams());
  const Subject who{.tenant = "tenant-417", .klass = "chat", .model = "m1"};
  TimePoint now = Clock::now();
  for (auto _ : state) {
    auto r = ledger.reserve(who, now, 1'300);
    ledger.settle(*r, now, 700);
    now += std::chrono::microseconds(100);
  }
}
BENCHMARK(BM_Quota_ReserveAndSettle);

void BM_Quota_UnlimitedTenant(benchmark::State& state) {
  // A tenant without quotas: the stage's only cost is this lookup.
  QuotaLedger ledger(tenants(1'000), teams());
  for (auto _ : state) benchmark::DoNotOptimize(ledger.limits("someone-else"));
}
BENCHMARK(BM_Quota_UnlimitedTenant);

}  // namespace
}  // namespace arbiter::quota
