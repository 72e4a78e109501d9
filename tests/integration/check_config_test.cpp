// `arbiter --config FILE --check`: 0 for a good config, 2 with every error
// and its key path for a bad one.
#include <filesystem>

#include <gtest/gtest.h>

#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"

namespace arbiter::test {
namespace {

TEST(CheckConfig, GoodConfigExitsZero) {
  GatewayConfig cfg;
  cfg.backend_ports = {9};
  const auto r = run_arbiter_check(cfg.to_yaml());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(CheckConfig, BadConfigExitsTwoListingEveryErrorWithItsPath) {
  const std::string yaml = R"(
listener: {address: 127.0.0.1, port: 70000}
listner: {threads: 2}
timeouts: {stream_idle_ms: -5}
limits: {max_body_bytes: lots}
auth: {enabled: true}
tenants:
  - {api_keys: [sk-x]}
models:
  - name: m1
    backends:
      - {url: "ftp://127.0.0.1:8000"}
      - {url: "http://127.0.0.1:8001", max_concurency: 4}
)";
  const auto r = run_arbiter_check(yaml);
  EXPECT_EQ(r.exit_code, 2);
  const std::string out = r.out + r.err;
  for (const char* path : {"listener.port", "listner", "timeouts.stream_idle_ms",
                           "limits.max_body_bytes", "tenants[0].name",
                           "models[0].backends[0].url", "models[0].backends[1].max_concurency"}) {
    EXPECT_NE(out.find(path), std::string::npos) << "no error mentions " << path << " in:\n" << out;
  }
}

TEST(CheckConfig, MissingFileExitsTwo) {
  const auto r = run_command({arbiter_binary(), "--config", "/nonexistent/arbiter.yaml", "--check"},
                             Millis(20'000));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
}

// examples/ must hold configs that run as they are.
TEST(CheckConfig, ShippedExamplesAreValid) {
  const std::filesystem::path dir = std::filesystem::path(ARBITER_SOURCE_DIR) / "examples";
  int checked = 0;
  if (std::filesystem::exists(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".yaml") continue;
      const auto r = run_command({arbiter_binary(), "--config", entry.path().string(), "--check"},
                                 Millis(20'000));
      EXPECT_EQ(r.exit_code, 0) << entry.path() << ":\n" << r.out << r.err;
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no examples/*.yaml yet";
}

}  // namespace
}  // namespace arbiter::test
