#include <gtest/gtest.h>

#include "http/connection_cap.hpp"

namespace arbiter {
namespace {

TEST(ConnectionCap, LeavesTheUpstreamsAndAFixedReserve) {
  EXPECT_EQ(default_connection_cap(1 << 20, 128), (1u << 20) - 64 - 128);
  EXPECT_EQ(default_connection_cap(1024, 64), 1024u - 128);
}

TEST(ConnectionCap, NeverReservesMoreThanHalfTheDescriptors) {
  // 128 descriptors and one backend of 64 slots: half for clients.
  EXPECT_EQ(default_connection_cap(128, 64), 64u);
  EXPECT_EQ(default_connection_cap(64, 1000), 32u);
}

}  // namespace
}  // namespace arbiter
