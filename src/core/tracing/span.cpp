#include "core/tracing/span.hpp"

#include <boost/json.hpp>

namespace arbiter::tracing {

namespace {

boost::json::object any_value(const AttributeValue& v) {
  return std::visit(
      [](const auto& x) -> boost::json::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) return {{"stringValue", x}};
        if constexpr (std::is_same_v<T, int64_t>) return {{"intValue", std::to_string(x)}};
        if constexpr (std::is_same_v<T, double>) return {{"doubleValue", x}};
        if constexpr (std::is_same_v<T, bool>) return {{"boolValue", x}};
      },
      v);
}

boost::json::object span_json(const Span& s) {
  boost::json::array attributes;
  for (const auto& [key, value] : s.attributes) attributes.push_back({{"key", key}, {"value", any_value(value)}});
  boost::json::object out{{"traceId", hex(s.trace_id)},
                          {"spanId", hex(s.span_id)},
                          {"name", s.name},
                          {"kind", static_cast<int>(s.kind)},
                          {"startTimeUnixNano", std::to_string(s.start_ns)},
                          {"endTimeUnixNano", std::to_string(s.end_ns)},
                          {"attributes", std::move(attributes)}};
  if (s.parent) out["parentSpanId"] = hex(*s.parent);
  if (s.error) out["status"] = boost::json::object{{"code", 2}, {"message", s.error_message}};
  return out;
}

}  // namespace

std::string otlp_json(std::span<const Span> spans, std::string_view service) {
  boost::json::array list;
  for (const Span& s : spans) list.push_back(span_json(s));
  boost::json::object resource{
      {"attributes", boost::json::array{boost::json::object{
                         {"key", "service.name"}, {"value", boost::json::object{{"stringValue", service}}}}}}};
  boost::json::object scope_spans{{"scope", boost::json::object{{"name", "arbiter"}}}, {"spans", std::move(list)}};
  boost::json::object resource_spans{{"resource", std::move(resource)},
                                     {"scopeSpans", boost::json::array{std::move(scope_spans)}}};
  return boost::json::serialize(boost::json::object{{"resourceSpans", boost::json::array{std::move(resource_spans)}}});
}

}  // namespace arbiter::tracing
