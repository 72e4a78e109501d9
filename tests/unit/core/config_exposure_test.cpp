#include "core/config_exposure.hpp"

#include <gtest/gtest.h>

namespace arbiter {
namespace {

TEST(ConfigExposure, LoopbackIsThisHostOnly) {
  for (const char* address : {"127.0.0.1", "127.3.2.1", "::1", "localhost"}) {
    EXPECT_TRUE(is_loopback(address)) << address;
  }
  for (const char* address : {"0.0.0.0", "::", "10.0.0.7", "192.168.1.2", "fe80::1", "1270.0.0.1x"}) {
    EXPECT_FALSE(is_loopback(address)) << address;
  }
}

TEST(ConfigExposure, AnApiPortBeyondThisHostWithoutAuthIsNamed) {
  Config config;
  EXPECT_TRUE(exposure_warnings(config).empty()) << "the defaults: loopback, no warning";
  config.listener.address = "0.0.0.0";
  const auto open = exposure_warnings(config);
  ASSERT_EQ(open.size(), 1u);
  EXPECT_NE(open[0].find("auth.enabled is false on 0.0.0.0"), std::string::npos) << open[0];
  config.auth.enabled = true;
  EXPECT_TRUE(exposure_warnings(config).empty()) << "keys asked: nothing open";
}

}  // namespace
}  // namespace arbiter
