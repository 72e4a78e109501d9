#include "gateway/observers/tracing/tracing_observer.hpp"

#include <random>

#include "gateway/observers/tracing/trace_slot.hpp"
#include "gateway/pipeline/request_context.hpp"

namespace arbiter {

using tracing::AttributeValue;
using tracing::Span;
using tracing::SpanKind;

uint64_t trace_random() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

namespace {

// gen_ai.operation.name of a route (OpenTelemetry's GenAI conventions).
std::string_view operation(Route route) {
  switch (route) {
    case Route::kChatCompletions: return "chat";
    case Route::kCompletions: return "text_completion";
    case Route::kEmbeddings: return "embeddings";
    case Route::kResponses: return "chat";  // the conventions name no other operation for it
  }
  return "chat";
}

uint64_t unix_ns(const TraceSlot& t, std::chrono::steady_clock::time_point started, std::chrono::steady_clock::time_point at) {
  const auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(at - started).count();
  return t.start_ns + static_cast<uint64_t>(std::max<int64_t>(0, since));
}

uint64_t after_ms(const TraceSlot& t, double ms) { return t.start_ns + static_cast<uint64_t>(std::max(0.0, ms) * 1e6); }

Span child(const TraceSlot& t, std::string name, SpanKind kind) {
  Span s;
  s.trace_id = t.trace_id;
  s.span_id = tracing::span_id_from(trace_random());
  s.parent = t.root;
  s.name = std::move(name);
  s.kind = kind;
  return s;
}

}  // namespace

void TracingObserver::on_start(RequestContext& ctx) {
  auto parent = tracing::parse_traceparent(ctx.req["traceparent"]);
  if (!tracing::sampled(parent, ratio_, trace_random())) return;
  TraceSlot& t = ctx.slots.emplace<TraceSlot>();
  t.trace_id = parent ? parent->trace_id : tracing::trace_id_from(trace_random(), trace_random());
  t.root = tracing::span_id_from(trace_random());
  if (parent) t.parent = parent->span_id;
  t.start_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(ctx.rec.ts.time_since_epoch()).count());
}

void TracingObserver::on_complete(const RequestContext& ctx) {
  const TraceSlot* t = ctx.slots.get<TraceSlot>();
  if (t == nullptr) return;
  const AccessRecord& rec = ctx.rec;
  const std::string op(operation(ctx.route));
  const std::string title = op + " " + rec.model;
  const uint64_t end_ns = after_ms(*t, rec.duration_ms);
  std::vector<Span> spans;
  spans.reserve(3 + t->attempts.size());

  Span& root = spans.emplace_back();
  root.trace_id = t->trace_id;
  root.span_id = t->root;
  root.parent = t->parent;
  root.name = title;
  root.kind = SpanKind::kServer;
  root.start_ns = t->start_ns;
  root.end_ns = end_ns;
  root.attributes = {{"gen_ai.operation.name", AttributeValue(op)},
                     {"gen_ai.request.model", AttributeValue(rec.model)},
                     {"http.request.method", AttributeValue(std::string("POST"))},
                     {"url.path", AttributeValue(rec.route)},
                     {"http.response.status_code", AttributeValue(int64_t{rec.status})},
                     {"arbiter.request_id", AttributeValue(rec.request_id)},
                     {"arbiter.tenant", AttributeValue(rec.tenant)},
                     {"arbiter.class", AttributeValue(rec.cls)}};
  if (rec.prompt_tokens >= 0) root.attributes.emplace_back("gen_ai.usage.input_tokens", rec.prompt_tokens);
  if (rec.completion_tokens >= 0) root.attributes.emplace_back("gen_ai.usage.output_tokens", rec.completion_tokens);
  if (!rec.backend.empty()) root.attributes.emplace_back("arbiter.backend", AttributeValue(rec.backend));
  if (!rec.error.empty()) {
    root.error = rec.status >= 500 || rec.status == 0;
    root.error_message = rec.error;
    root.attributes.emplace_back("error.type", AttributeValue(rec.error));
  }

  // The queue: up to the first attempt (or, never dispatched, to the end).
  if (rec.queue_ms > 0 || !rec.wait_reason.empty()) {
    Span q = child(*t, "queue", SpanKind::kInternal);
    const double first_queue_ms = ctx.dispatch_queue_ms.value_or(rec.queue_ms);
    q.end_ns = t->attempts.empty() ? end_ns : unix_ns(*t, ctx.started, t->attempts.front().start);
    q.start_ns = q.end_ns - std::min<uint64_t>(q.end_ns - t->start_ns, static_cast<uint64_t>(first_queue_ms * 1e6));
    q.attributes = {{"arbiter.queue_ms", AttributeValue(rec.queue_ms)}};
    if (!rec.wait_reason.empty()) q.attributes.emplace_back("arbiter.wait_reason", AttributeValue(std::string(rec.wait_reason)));
    spans.push_back(std::move(q));
  }
  for (const TraceSlot::Attempt& a : t->attempts) {
    Span s;
    s.trace_id = t->trace_id;
    s.span_id = a.span;
    s.parent = t->root;
    s.name = title;
    s.kind = SpanKind::kClient;
    s.start_ns = unix_ns(*t, ctx.started, a.start);
    s.end_ns = unix_ns(*t, ctx.started, a.end == TraceSlot::Clock::time_point{} ? a.start : a.end);
    s.attributes = {{"gen_ai.operation.name", AttributeValue(op)},
                    {"gen_ai.request.model", AttributeValue(rec.model)},
                    {"server.address", AttributeValue(a.backend)},
                    {"arbiter.attempt", AttributeValue(std::string(a.kind))}};
    if (a.status > 0) s.attributes.emplace_back("http.response.status_code", int64_t{a.status});
    s.error = a.status == 0 || a.status >= 500;
    spans.push_back(std::move(s));
  }
  // The relay: from the answer's first byte to the client to its end.
  if (rec.ttfb_ms >= 0) {
    Span r = child(*t, "relay", SpanKind::kInternal);
    r.start_ns = after_ms(*t, rec.ttfb_ms);
    r.end_ns = std::max(r.start_ns, end_ns);
    r.attributes = {{"arbiter.bytes_out", AttributeValue(static_cast<int64_t>(rec.bytes_out))},
                    {"arbiter.stream", AttributeValue(rec.stream)}};
    spans.push_back(std::move(r));
  }
  exporter_.add(std::move(spans));
}

}  // namespace arbiter
