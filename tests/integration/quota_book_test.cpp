// The quota book's lease refills against a real redis-server, without the
// HTTP around them: two books (two replicas) sharing one max_concurrent
// limit, many requests asking at once on each, must admit exactly the limit
// between them. A slot a refill brought in must be used by a request asking
// for it, not sit idle on one replica while the other's requests are refused.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <chrono>
#include <vector>

#include "gateway/config_yaml.hpp"
#include "gateway/stages/quota/quota_book.hpp"
#include "support/redis_server.hpp"

namespace arbiter::test {
namespace {

Config shared_config(const RedisServer& redis, const std::string& quota) {
  const std::string yaml = "tenants:\n  - {name: a, api_keys: [k1], quotas: [" + quota +
                           "]}\n"
                           "models:\n  - name: m1\n    backends: [{url: \"http://127.0.0.1:8000\"}]\n"
                           "quota_store: {redis: \"" +
                           redis.address() + "\", replicas: 2, lease_share: 0, timeout_ms: 2000}\n";
  auto config = parse_config(yaml);
  EXPECT_TRUE(config) << ::testing::PrintToString(config.error());
  return *config;
}

// `asked` requests at once on each of two books; each admitted one keeps its
// slot until the round ends. Returns how many were admitted in all.
int admitted_in_one_round(QuotaBook& a, QuotaBook& b, net::io_context& ioc, int asked, int64_t tokens = 0) {
  std::vector<std::optional<QuotaPermit>> held;
  held.reserve(2 * asked);
  int refused = 0, done = 0;
  for (QuotaBook* book : {&a, &b}) {
    for (int i = 0; i < asked; ++i) {
      net::co_spawn(
          ioc,
          [&, book]() -> Task<void> {
            auto admission = co_await book->reserve({.tenant = "a", .klass = "chat", .model = "m1"}, tokens);
            if (admission.result) {
              held.emplace_back(std::in_place, *book, std::move(*admission.result));
            } else {
              ++refused;
            }
            // The Redis connection stays open: the round ends with its last answer.
            if (++done == 2 * asked) ioc.stop();
          },
          net::detached);
    }
  }
  ioc.restart();
  ioc.run_for(std::chrono::seconds(30));
  EXPECT_EQ(done, 2 * asked) << "requests still waiting after 30 s";
  return static_cast<int>(held.size());
}

TEST(QuotaBookLeases, SharedConcurrencyAdmitsExactlyTheLimitWhenManyAskAtOnce) {
  RedisServer redis;
  // Every refill is one slot (lease_share 0): each replica's requests take
  // turns refilling, and slots granted to one request are often taken by
  // another one woken at the same moment.
  for (const int limit : {1, 3, 4, 7, 16, 30}) {
    for (const int asked : {2, 6, 12, 20}) {
      SCOPED_TRACE("limit " + std::to_string(limit) + ", " + std::to_string(asked) + " asking on each replica");
      Config config = shared_config(redis, "{max_concurrent: " + std::to_string(limit) + "}");
      config.quota_store.key_prefix += ":" + std::to_string(limit) + ":" + std::to_string(asked);
      net::io_context ioc;
      metrics::Registry registry_a, registry_b;  // two gateways' own
      auto a = std::make_unique<QuotaBook>(config, ioc.get_executor(), registry_a);
      auto b = std::make_unique<QuotaBook>(config, ioc.get_executor(), registry_b);
      EXPECT_EQ(admitted_in_one_round(*a, *b, ioc, asked), std::min(limit, 2 * asked));
    }
  }
}

// The same for a token bucket: leases of exactly the shortfall, so every
// request's tokens are one refill of their own.
TEST(QuotaBookLeases, SharedTokenQuotaAdmitsWhatTheBucketHoldsWhenManyAskAtOnce) {
  RedisServer redis;
  for (const int asked : {3, 12, 25}) {
    SCOPED_TRACE(std::to_string(asked) + " asking on each replica");
    Config config = shared_config(redis, "{tokens_per_minute: 2000}");
    config.quota_store.key_prefix += ":tokens:" + std::to_string(asked);
    net::io_context ioc;
    metrics::Registry registry_a, registry_b;  // two gateways' own
    auto a = std::make_unique<QuotaBook>(config, ioc.get_executor(), registry_a);
    auto b = std::make_unique<QuotaBook>(config, ioc.get_executor(), registry_b);
    // 100 tokens each: the bucket's 2,000 hold 20 of them.
    EXPECT_EQ(admitted_in_one_round(*a, *b, ioc, asked, 100), std::min(20, 2 * asked));
  }
}

}  // namespace
}  // namespace arbiter::test
