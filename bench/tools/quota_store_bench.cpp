// The quota stage's added latency with quotas shared through Redis (issue
// 14), paced like a gateway at a given request rate: each admission runs
// what QuotaStage does (try_reserve, and the lease refill from Redis when
// the lease is short) and is settled at once with its tokens. Prints the
// admission latency (P50/P90/P99/max, us) and Redis calls per request.
// Without --redis the same quotas are counted in-process, for comparison.
//   quota_store_bench [--redis HOST:PORT] [--rate 1000] [--seconds 5]
//                     [--lease-share 0.02] [--tokens 1000] [--rpm 75000] [--tpm 75000000]
// bench/quota_store.sh starts a redis-server and records both.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gateway/stages/quota/quota_book.hpp"

using namespace arbiter;

namespace {

struct Flags {
  std::string redis;
  double rate = 1000;
  double seconds = 5;
  double lease_share = 0.02;
  int64_t tokens = 1000;
  double rpm = 75'000;         // 1.25x what --rate asks at the default rate
  double tpm = 75'000'000;
};

Task<void> drive(QuotaBook& book, const Flags& f, std::vector<double>& latencies_us) {
  net::steady_timer pace(co_await net::this_coro::executor);
  const quota::Subject who{.tenant = "t", .klass = "chat", .model = "m"};
  const auto interval = std::chrono::duration_cast<quota::Duration>(std::chrono::duration<double>(1.0 / f.rate));
  auto next = quota::Clock::now();
  const auto end = next + std::chrono::duration_cast<quota::Duration>(std::chrono::duration<double>(f.seconds));
  while (next < end) {
    next += interval;
    pace.expires_at(next);
    (void)co_await pace.async_wait(kAsTuple);
    const auto t = quota::Clock::now();
    auto a = book.try_reserve(who, t, f.tokens);
    if (!a.result && a.result.error().lease_short) a = co_await book.reserve(who, f.tokens);
    latencies_us.push_back(std::chrono::duration<double, std::micro>(quota::Clock::now() - t).count());
    if (a.result) book.settle(*a.result, quota::Clock::now(), f.tokens);
  }
}

double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p / 100 * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--redis") f.redis = v;
    else if (k == "--rate") f.rate = std::stod(v);
    else if (k == "--seconds") f.seconds = std::stod(v);
    else if (k == "--lease-share") f.lease_share = std::stod(v);
    else if (k == "--tokens") f.tokens = std::stoll(v);
    else if (k == "--rpm") f.rpm = std::stod(v);
    else if (k == "--tpm") f.tpm = std::stod(v);
    else {
      std::fprintf(stderr, "quota_store_bench: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (!f.redis.empty() && !parse_redis_address(f.redis)) {
    std::fprintf(stderr, "quota_store_bench: --redis must be host:port\n");
    return 2;
  }
  Config config;
  TenantConfig t;
  t.name = "t";
  t.team = "t";
  // Above what the run asks: what is measured is the bookkeeping, not refusals.
  t.quotas = {{.requests_per_minute = f.rpm, .tokens_per_minute = f.tpm}};
  config.tenants = {t};
  config.quota_store.redis = f.redis;
  config.quota_store.lease_share = f.lease_share;
  config.quota_store.replicas = 3;
  net::io_context ioc(1);
  metrics::Registry registry;
  QuotaBook book(config, net::make_strand(ioc), registry);
  std::vector<double> latencies;
  net::co_spawn(ioc, drive(book, f, latencies), [&](std::exception_ptr) { ioc.stop(); });
  ioc.run();
  const double calls_per_request = static_cast<double>(book.store_calls()) / static_cast<double>(latencies.size());
  std::printf(
      "{\"store\":\"%s\",\"rate\":%.0f,\"rpm\":%.0f,\"requests\":%zu,\"lease_share\":%g,\"p50_us\":%.2f,\"p90_us\":%.2f,"
      "\"p99_us\":%.2f,\"max_us\":%.1f,\"store_calls_per_request\":%.4f,\"store_failures\":%llu}\n",
      f.redis.empty() ? "in-process" : "redis", f.rate, f.rpm, latencies.size(), f.lease_share, pct(latencies, 50),
      pct(latencies, 90), pct(latencies, 99), pct(latencies, 100), calls_per_request,
      static_cast<unsigned long long>(book.store_failures()));
  return 0;
}
