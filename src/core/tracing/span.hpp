// A finished span as OpenTelemetry describes one, and a batch of them in
// OTLP/HTTP's JSON encoding (ExportTraceServiceRequest;
// https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding): ids in
// hex, times and integers as decimal strings. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/tracing/trace_context.hpp"

namespace arbiter::tracing {

enum class SpanKind : uint8_t { kInternal = 1, kServer = 2, kClient = 3 };

using AttributeValue = std::variant<std::string, int64_t, double, bool>;

struct Span {
  TraceId trace_id{};
  SpanId span_id{};
  std::optional<SpanId> parent;  // none: a root span
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  uint64_t start_ns = 0;  // Unix time, nanoseconds
  uint64_t end_ns = 0;
  // Keys are the conventions' names: static text.
  std::vector<std::pair<std::string_view, AttributeValue>> attributes;
  bool error = false;  // status ERROR (else UNSET)
  std::string error_message;
};

// One export request's body for `spans`, under a resource naming `service`
// (written by hand: a JSON document per span cost more than the request).
std::string otlp_json(std::span<const Span> spans, std::string_view service);

}  // namespace arbiter::tracing
