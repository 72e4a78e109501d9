#include "core/tracing/span.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace arbiter::tracing {
namespace {

TEST(OtlpJson, IsAnExportRequestWithHexIdsAndDecimalStringTimes) {
  Span root{.trace_id = trace_id_from(1, 2), .span_id = span_id_from(3), .parent = span_id_from(9),
            .name = "chat m1", .kind = SpanKind::kServer, .start_ns = 1'700'000'000'000'000'000ULL,
            .end_ns = 1'700'000'000'500'000'000ULL,
            .attributes = {{"gen_ai.request.model", AttributeValue(std::string("m1"))},
                           {"gen_ai.usage.input_tokens", AttributeValue(int64_t{12})},
                           {"arbiter.queue_ms", AttributeValue(1.5)},
                           {"arbiter.stream", AttributeValue(true)}},
            .error = true, .error_message = "upstream_error"};
  Span child{.trace_id = root.trace_id, .span_id = span_id_from(4), .name = "queue"};
  const Span spans[] = {root, child};
  const auto doc = boost::json::parse(otlp_json(spans, "arbiter-test")).as_object();
  const auto& rs = doc.at("resourceSpans").at(0);
  EXPECT_EQ(rs.at("resource").at("attributes").at(0).at("value").at("stringValue"), "arbiter-test");
  const auto& list = rs.at("scopeSpans").at(0).at("spans").as_array();
  ASSERT_EQ(list.size(), 2u);
  const auto& s = list[0].as_object();
  EXPECT_EQ(s.at("traceId"), "00000000000000010000000000000002");
  EXPECT_EQ(s.at("spanId"), "0000000000000003");
  EXPECT_EQ(s.at("parentSpanId"), "0000000000000009");
  EXPECT_EQ(s.at("kind"), 2);
  EXPECT_EQ(s.at("startTimeUnixNano"), "1700000000000000000");
  EXPECT_EQ(s.at("endTimeUnixNano"), "1700000000500000000");
  EXPECT_EQ(s.at("status").at("code"), 2);
  const auto& attributes = s.at("attributes").as_array();
  EXPECT_EQ(attributes.at(1).at("value").at("intValue"), "12");
  EXPECT_EQ(attributes.at(2).at("value").at("doubleValue"), 1.5);
  EXPECT_EQ(attributes.at(3).at("value").at("boolValue"), true);
  EXPECT_FALSE(list[1].as_object().contains("parentSpanId"));
  // Text is escaped: still one JSON document.
  Span odd{.trace_id = root.trace_id, .span_id = span_id_from(5), .name = "a \"quoted\"\n\x01 name\\"};
  const auto escaped = boost::json::parse(otlp_json(std::span<const Span>(&odd, 1), "s")).as_object();
  EXPECT_EQ(escaped.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).at("name").as_string(),
            "a \"quoted\"\n\x01 name\\");
  EXPECT_FALSE(list[1].as_object().contains("status"));
}

}  // namespace
}  // namespace arbiter::tracing
