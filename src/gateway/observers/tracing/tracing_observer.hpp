// Traces requests (docs/tracing.md): at a request's start, whether it is
// sampled (the client's traceparent decides, else `tracing.sample`); a
// sampled one gets a TraceSlot, which the handler fills with its upstream
// attempts; at its end its spans go to the exporter: the request (SERVER,
// GenAI semantic conventions), its queue wait with the wait reason, each
// upstream attempt (CLIENT: first, retry, failover, resume; the engine's
// traceparent names it) and the relay to the client.
#pragma once

#include "core/config.hpp"
#include "gateway/observers/tracing/trace_exporter.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class TracingObserver final : public CompletionObserver {
 public:
  TracingObserver(const TracingConfig& config, TraceExporter& exporter) : ratio_(config.sample), exporter_(exporter) {}

  void on_start(RequestContext& ctx) override;
  void on_complete(const RequestContext& ctx) override;

 private:
  double ratio_;
  TraceExporter& exporter_;
};

// A random 64-bit word for ids and sampling (per thread).
uint64_t trace_random();

}  // namespace arbiter
