// A traced request's spans in the making (docs/tracing.md), kept on the
// request (RequestContext::slots) from its start: its trace and root span
// ids, the client's span it continues, and each upstream attempt the
// handler makes (gateway/handler: begin_attempt before the request is
// sent, so the engine's traceparent names the attempt's span; end_attempt
// when it ends). Only a sampled request has one.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tracing/trace_context.hpp"

namespace arbiter {

struct TraceSlot {
  using Clock = std::chrono::steady_clock;

  struct Attempt {
    tracing::SpanId span{};
    std::string backend;
    std::string_view kind;  // first, retry, failover, resume
    Clock::time_point start;
    Clock::time_point end;
    int status = 0;  // the engine's HTTP status; 0: no answer (an error before one)
  };

  tracing::TraceId trace_id{};
  tracing::SpanId root{};
  std::optional<tracing::SpanId> parent;  // the client's span, from its traceparent
  uint64_t start_ns = 0;                  // the request's start, Unix nanoseconds
  std::vector<Attempt> attempts;
  // What the next attempt is (set by the handler when it decides to run
  // again); the first one is "first".
  std::string_view next_kind = "first";
  // The traceparent the engine gets for the attempt under way.
  std::string traceparent;

  // A new attempt on `backend` starts now; its traceparent for the engine.
  const std::string& begin_attempt(std::string backend, uint64_t span_word) {
    Attempt& a = attempts.emplace_back();
    a.span = tracing::span_id_from(span_word);
    a.backend = std::move(backend);
    a.kind = next_kind;
    a.start = Clock::now();
    traceparent = tracing::format_traceparent(trace_id, a.span, true);
    return traceparent;
  }
  void end_attempt(int status) {
    if (attempts.empty()) return;
    attempts.back().end = Clock::now();
    attempts.back().status = status;
  }
};

}  // namespace arbiter
