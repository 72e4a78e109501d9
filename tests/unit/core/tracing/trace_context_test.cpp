#include "core/tracing/trace_context.hpp"

#include <gtest/gtest.h>

namespace arbiter::tracing {
namespace {

constexpr std::string_view kW3cExample = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

TEST(TraceContext, ReadsAndWritesTheW3cExample) {
  const auto parent = parse_traceparent(kW3cExample);
  ASSERT_TRUE(parent);
  EXPECT_EQ(hex(parent->trace_id), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(hex(parent->span_id), "b7ad6b7169203331");
  EXPECT_TRUE(parent->sampled);
  EXPECT_EQ(format_traceparent(parent->trace_id, parent->span_id, true), kW3cExample);
  EXPECT_FALSE(parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")->sampled);
  // A later version may add fields after its own.
  EXPECT_TRUE(parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-whatever"));
}

TEST(TraceContext, RefusesWhatTheSpecCallsInvalid) {
  for (const std::string_view bad : {
           "",
           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",      // no flags
           "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",   // upper case
           "00-00000000000000000000000000000000-b7ad6b7169203331-01",   // zero trace id
           "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",   // zero span id
           "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",   // version ff
           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x", // 00 has no more fields
           "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
       }) {
    EXPECT_FALSE(parse_traceparent(bad)) << bad;
  }
}

TEST(TraceContext, FreshIdsAreNeverZero) {
  EXPECT_EQ(hex(trace_id_from(0, 0)), "00000000000000000000000000000001");
  EXPECT_EQ(hex(span_id_from(0)), "0000000000000001");
  EXPECT_EQ(hex(span_id_from(0x0123456789abcdefULL)), "0123456789abcdef");
}

TEST(TraceContext, TheParentDecidesElseTheRatio) {
  TraceParent on{.sampled = true};
  TraceParent off{.sampled = false};
  EXPECT_TRUE(sampled(on, 0.0, 0));
  EXPECT_FALSE(sampled(off, 1.0, 0));
  EXPECT_FALSE(sampled(std::nullopt, 0.0, 0));
  EXPECT_TRUE(sampled(std::nullopt, 1.0, ~uint64_t{0}));
  // A quarter of the draws, spread evenly over the range (the one on the
  // boundary falls either way).
  int taken = 0;
  for (uint64_t i = 0; i < 1024; ++i) taken += sampled(std::nullopt, 0.25, i * (~uint64_t{0} / 1024)) ? 1 : 0;
  EXPECT_NEAR(taken, 256, 1);
}

}  // namespace
}  // namespace arbiter::tracing
