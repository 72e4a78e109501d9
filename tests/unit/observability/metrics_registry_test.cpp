#include "observability/metrics_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace arbiter::metrics {
namespace {

using ::testing::HasSubstr;

TEST(MetricsRegistry, ARealCounterAddsFractionsAndRendersAsACounter) {
  Registry r;
  auto& cost = r.real_counter("x_cost_total", "Cost.", {"team"});
  cost.with({"ml"}).add(0.25);
  cost.with({"ml"}).add(0.5);
  cost.with({"web"}).add(2);
  const std::string text = r.render();
  EXPECT_THAT(text, HasSubstr("# TYPE x_cost_total counter\n"));
  EXPECT_THAT(text, HasSubstr("x_cost_total{team=\"ml\"} 0.75\n"));
  EXPECT_THAT(text, HasSubstr("x_cost_total{team=\"web\"} 2\n"));
}

TEST(MetricsRegistry, RendersCountersGaugesAndHistogramsInTextFormat) {
  Registry r;
  auto& requests = r.counter("x_requests_total", "Requests.", {"model", "status"});
  auto& inflight = r.gauge("x_in_flight", "In flight.", {});
  auto& latency = r.histogram("x_latency_seconds", "Latency.", {"model"}, {0.1, 1});
  requests.with({"m1", "200"}).inc();
  requests.with({"m1", "200"}).inc(2);
  requests.with({"m\"2\n", "500"}).inc();
  inflight.with({}).add(3);
  inflight.with({}).sub(1);
  latency.with({"m1"}).observe(0.05);
  latency.with({"m1"}).observe(0.5);
  latency.with({"m1"}).observe(5);
  const std::string text = r.render();
  EXPECT_THAT(text, HasSubstr("# TYPE x_requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("x_requests_total{model=\"m1\",status=\"200\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("x_requests_total{model=\"m\\\"2\\n\",status=\"500\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE x_in_flight gauge\nx_in_flight 2\n"));
  EXPECT_THAT(text, HasSubstr("x_latency_seconds_bucket{model=\"m1\",le=\"0.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("x_latency_seconds_bucket{model=\"m1\",le=\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("x_latency_seconds_bucket{model=\"m1\",le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("x_latency_seconds_sum{model=\"m1\"} 5.55\n"));
  EXPECT_THAT(text, HasSubstr("x_latency_seconds_count{model=\"m1\"} 3\n"));
}

TEST(MetricsRegistry, ChildReferencesStayValid) {
  Registry r;
  auto& f = r.counter("c_total", "c", {"k"});
  Counter& first = f.with({"a"});
  for (int i = 0; i < 1000; ++i) f.with({std::to_string(i)}).inc();
  first.inc();
  EXPECT_EQ(&first, &f.with({"a"}));
  EXPECT_EQ(f.with({"a"}).value(), 1u);
}

// A render lists each family's children once and renders them without the
// family's lock; a child added after a render still appears, in label order,
// in the next one, and label text made once keeps its escapes.
TEST(MetricsRegistry, ChildrenAddedBetweenRendersAppearInLabelOrder) {
  Registry r;
  auto& f = r.counter("c_total", "c", {"k"});
  auto& h = r.histogram("h_seconds", "h", {"k"}, {1});
  f.with({"b"}).inc();
  h.with({"b"}).observe(2);
  (void)r.render();
  f.with({"a\\"}).inc(2);
  h.with({"a"}).observe(0.5);
  const std::string text = r.render();
  EXPECT_THAT(text, HasSubstr("c_total{k=\"a\\\\\"} 2\nc_total{k=\"b\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("h_seconds_count{k=\"a\"} 1\nh_seconds_bucket{k=\"b\",le=\"1\"} 0\n"));
  EXPECT_EQ(r.render(), text) << "nothing changed, nothing moves";
}

TEST(MetricsRegistry, BoundaryValuesFallInTheirBucket) {
  Histogram h({1, 2});
  h.observe(1);  // le="1" is inclusive
  h.observe(2.0000001);
  const auto s = h.snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{1, 1, 2}));
  EXPECT_EQ(s.count, 2u);
}

}  // namespace
}  // namespace arbiter::metrics
