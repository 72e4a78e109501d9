// prefix_cache_tokens: auto (the default for http backends): the gateway's
// prefix-affinity index sizes a backend by the KV cache its engine reports
// (vLLM's cache_config_info; arbiter-sim exports the same), not by a guess.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"

namespace arbiter::test {
namespace {

TEST(PrefixCache, AutoTakesTheEnginesKvSizeAndAConfiguredOneStays) {
  // An engine with 1,000 blocks of 16 tokens: 16,000 tokens of cache. With
  // prefix_cache_tokens: auto (the default) the gateway's affinity index
  // sizes the backend by it once a scrape reports it; a configured value
  // stays.
  SimProcess small({"--profile", "tiny", "--model", "m1", "--num-blocks", "1000", "--block-size", "16"});
  SimProcess fixed({"--profile", "tiny", "--model", "m1", "--num-blocks", "1000", "--block-size", "16"});
  GatewayConfig config;
  config.engine_signals = true;
  config.backend_ports = {small.port(), fixed.port()};
  config.backend_extras = {", name: auto", ", name: fixed, prefix_cache_tokens: 5120"};
  GatewayProcess gateway(config.to_yaml());
  const auto cache_of = [&](const char* backend) {
    return metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_backend_prefix_cache_tokens",
                        {{"backend", backend}});
  };
  std::optional<double> seen;
  for (int i = 0; i < 100 && (seen = cache_of("auto")) != 16'000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(seen, 16'000);
  EXPECT_EQ(cache_of("fixed"), 5'120);
}

}  // namespace
}  // namespace arbiter::test
