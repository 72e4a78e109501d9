// W3C Trace Context (https://www.w3.org/TR/trace-context/): a request's
// trace id and its parent's span id, read from a client's `traceparent`
// and written into the gateway's own for each upstream attempt; fresh ids;
// the sampling decision. Pure: randomness is handed in.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter::tracing {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

struct TraceParent {
  TraceId trace_id{};
  SpanId span_id{};  // the caller's span: the parent of the gateway's
  bool sampled = false;
};

// A `traceparent` header's value (version 00, or a later one read as 00
// prescribes); nullopt when it is malformed or its ids are all zero.
std::optional<TraceParent> parse_traceparent(std::string_view value);
// "00-<trace>-<span>-01" (or -00 when not sampled).
std::string format_traceparent(const TraceId& trace, const SpanId& span, bool sampled);

std::string hex(const TraceId& id);
std::string hex(const SpanId& id);

// Ids from two random words (never all zero).
TraceId trace_id_from(uint64_t hi, uint64_t lo);
SpanId span_id_from(uint64_t word);

// Whether a request is traced: the caller's sampled flag when it sent a
// traceparent (parent-based, as OpenTelemetry's default sampler), else
// `ratio` of requests, by `draw` (uniform over 64 bits).
bool sampled(const std::optional<TraceParent>& parent, double ratio, uint64_t draw);

}  // namespace arbiter::tracing
