// core/decimal.hpp against std::to_chars: every power of ten and its
// neighbours (where the digit count changes), the extremes, and random
// values of every width.
#include <gtest/gtest.h>

#include <charconv>
#include <limits>
#include <random>
#include <string>

#include "core/decimal.hpp"

namespace arbiter {
namespace {

std::string ours(int64_t v) {
  char buf[32];
  return {buf, put_int(buf, v)};
}
std::string ours(uint64_t v) {
  char buf[32];
  return {buf, put_uint(buf, v)};
}
template <class T>
std::string library(T v) {
  char buf[32];
  return {buf, std::to_chars(buf, buf + sizeof buf, v).ptr};
}

TEST(Decimal, WritesWhatToCharsWritesAtEveryWidth) {
  for (const uint64_t v : {uint64_t{0}, uint64_t{1}, std::numeric_limits<uint64_t>::max()}) {
    EXPECT_EQ(ours(v), library(v));
  }
  for (const int64_t v : {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), int64_t{-1}}) {
    EXPECT_EQ(ours(v), library(v));
  }
  for (uint64_t p = 1; p <= 1'000'000'000'000'000'000ULL; p *= 10) {
    for (const uint64_t v : {p - 1, p, p + 1}) {
      EXPECT_EQ(ours(v), library(v)) << v;
      EXPECT_EQ(ours(-static_cast<int64_t>(v)), library(-static_cast<int64_t>(v))) << v;
    }
  }
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    ASSERT_EQ(ours(v), library(v)) << v;
    ASSERT_EQ(ours(static_cast<int64_t>(v)), library(static_cast<int64_t>(v))) << v;
  }
}

}  // namespace
}  // namespace arbiter
