// Prefix-affinity routing through the gateway: requests sharing a long
// prompt prefix reach the backend that was sent it, where least-loaded
// routing spreads them.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"

namespace arbiter::test {
namespace {

// Backends that served `n` sequential chat requests whose prompts share a
// 4 KB prefix, each with its own ending.
std::multiset<std::string> backends_for_shared_prefix(const std::string& backend_extra, int n) {
  SimProcess a({"--profile", "tiny", "--model", "m1"});
  SimProcess b({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {a.port(), b.port()};
  config.backend_extra = backend_extra;
  GatewayProcess gateway(config.to_yaml());
  const std::string shared(4096, 's');
  std::multiset<std::string> served;
  for (int i = 0; i < n; ++i) {
    const HttpResponse r = http_call(
        gateway.port(),
        gateway_post("/v1/chat/completions",
                     sim_chat(R"("max_tokens":2)", shared + " question " + std::to_string(i), "m1"),
                     kAlphaKey, "chat"),
        Millis(30'000));
    EXPECT_EQ(r.status, 200) << r.body;
    served.insert(r.header("x-arbiter-backend").value_or("(none)"));
  }
  return served;
}

TEST(PrefixAffinity, RequestsSharingAPrefixReachTheSameBackend) {
  const auto served = backends_for_shared_prefix("", 8);
  EXPECT_EQ(std::set<std::string>(served.begin(), served.end()).size(), 1u);
}

TEST(PrefixAffinity, WithoutPrefixCachesTheyAreSpreadByLoad) {
  // prefix_cache_tokens: 0 turns affinity off: idle backends take turns.
  const auto served = backends_for_shared_prefix(", prefix_cache_tokens: 0", 8);
  EXPECT_EQ(std::set<std::string>(served.begin(), served.end()).size(), 2u);
}

}  // namespace
}  // namespace arbiter::test
